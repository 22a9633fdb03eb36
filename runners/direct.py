"""DirectRunner, the default: Beam's FnApiRunner with one worker process per core.

Beam's own DirectRunner first tries to download the Prism runner, which fails (or hangs) without
internet; FnApiRunner is named explicitly so that never happens.
"""

from __future__ import annotations

import os

from runners.options import with_defaults


def arguments(beam_args: list[str]) -> list[str]:
    return with_defaults(beam_args, runner="FnApiRunner", direct_running_mode="multi_processing",
                         direct_num_workers=str(os.cpu_count() or 1))
