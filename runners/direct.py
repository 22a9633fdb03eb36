"""DirectRunner, the default: Beam's FnApiRunner with one worker process per core.

Beam's own DirectRunner first tries to download the Prism runner, which fails (or hangs) without
internet; FnApiRunner is named explicitly so that never happens. Its worker processes run
``runners.local_worker`` (see there why).
"""

from __future__ import annotations

import os
import sys

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from runners.options import with_defaults

WORKER_COMMAND = f"{sys.executable} -m runners.local_worker"


def arguments(beam_args: list[str]) -> list[str]:
    return with_defaults(beam_args, runner="FnApiRunner", direct_running_mode="multi_processing",
                         direct_num_workers=str(os.cpu_count() or 1))


def runner(options: PipelineOptions):
    """The runner for ``beam.Pipeline(runner=…)``: for FnApiRunner in multi-processing mode, one whose workers
    run ``WORKER_COMMAND``; otherwise None, and Beam makes the runner the options name."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    direct = options.view_as(DirectOptions)
    if (options.view_as(StandardOptions).runner != "FnApiRunner"
            or direct.direct_running_mode != "multi_processing"):
        return None
    # In multi-processing mode FnApiRunner puts its own worker command back; in the "in_memory" mode it keeps
    # the environment given here, whose workers are processes all the same (direct_num_workers of them).
    direct.direct_running_mode = "in_memory"
    return FnApiRunner(default_environment=SubprocessSDKEnvironment.from_command_string(WORKER_COMMAND))
