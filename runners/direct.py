"""DirectRunner, the default: Beam's FnApiRunner with one worker process per core.

Beam's own DirectRunner first tries to download the Prism runner, which fails (or hangs) without
internet; FnApiRunner is named explicitly so that never happens.
"""

from __future__ import annotations

import os


def arguments(beam_args: list[str]) -> list[str]:
    """Defaults first, so a ``--direct_num_workers`` given on the command line wins."""
    return ["--runner=FnApiRunner", "--direct_running_mode=multi_processing",
            f"--direct_num_workers={os.cpu_count() or 1}", *beam_args]
