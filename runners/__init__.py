"""What it takes to launch a crawl on each engine; one module per engine. An engine's module (and Beam)
is loaded only when a pipeline is planned: a crawl that needs none (pipeline/unchanged.py) and the checks
of ``runners.options`` run without Beam."""

from __future__ import annotations

import importlib

from beamtrawl.runners.options import RunnerError

_ENGINES = {"direct": "direct", "directrunner": "direct", "fnapirunner": "direct", "flink": "flink",
            "flinkrunner": "flink", "spark": "spark", "sparkrunner": "spark", "dataflow": "dataflow",
            "dataflowrunner": "dataflow"}
_REFUSED = {
    # Tried with Beam 2.73 and dask 2026.8: the crawl failed in discovery with an empty index.
    "dask": "DaskRunner loses data: it hands every tagged output to every consumer, drops what "
            "finish_bundle emits (beamtrawl's counts) and computes only the last of several sinks",
    "prism": "Prism is a binary Beam downloads from GitHub at run time, which these machines cannot reach; "
             "use direct",
}


def engine(name: str | None) -> str | None:
    """The module of ``runners`` that launches a crawl on runner ``name`` (default: direct), or None."""
    return _ENGINES.get((name or "direct").lower())


def pipeline_options(name: str | None, beam_args: list[str], target):
    """Options for runner ``name`` (default: direct) plus any Beam pipeline options given."""
    from beamtrawl.runners.view_once import ViewOnceOptions as PipelineOptions

    key = (name or "direct").lower()
    refusal = _REFUSED.get(key.removesuffix("runner"))
    if refusal:
        raise RunnerError(f"runner {name} is not supported: {refusal}")
    engine = importlib.import_module(f"{__name__}.{_ENGINES[key]}") if key in _ENGINES else None
    if _ENGINES.get(key) != "direct" and target.local_only:
        raise RunnerError(f"the embedded SQLite index can only be written by the direct runner, not "
                          f"{name}: its workers may run on other machines; index into OpenSearch instead")
    if engine is None:
        return PipelineOptions([f"--runner={name}", *beam_args])
    return PipelineOptions(engine.arguments(beam_args))


def make_runner(options):
    """The runner object for ``beam.Pipeline(runner=…, options=options)``; None lets Beam make it."""
    from beamtrawl.runners import direct

    return direct.runner(options)


__all__ = ["RunnerError", "engine", "make_runner", "pipeline_options"]
