"""What it takes to launch a crawl on each engine; one module per engine."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from runners import direct

_ALIASES = {"direct": direct, "directrunner": direct, "fnapirunner": direct}


class RunnerError(Exception):
    """The runner cannot run this crawl; the message says why."""


def pipeline_options(name: str | None, beam_args: list[str], target) -> PipelineOptions:
    """Options for runner ``name`` (default: direct) plus any Beam pipeline options given."""
    module = _ALIASES.get((name or "direct").lower())
    if module is None:
        if target.local_only:
            raise RunnerError(f"the embedded SQLite index can only be written by the direct runner, not "
                              f"{name}: its workers may run on other machines; index into OpenSearch instead")
        return PipelineOptions([f"--runner={name}", *beam_args])
    return PipelineOptions(module.arguments(beam_args))
