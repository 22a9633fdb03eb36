"""What a crawl shows while it runs: a live line on a terminal (rich), a plain line every few seconds
when the output is a log (CI), nothing with ``--quiet``.

Workers on this machine keep their stages' counts in files of a folder the command names in the
environment (transforms/progress.py); a thread here adds them up. Workers on a cluster do not see
that folder: they log their counts as before, and the cluster's own UI shows the job.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
import threading
import time
from typing import Self

from beamtrawl.transforms.progress import PROGRESS_DIR_ENV

#: Seconds between lines when the output is not a terminal.
LOG_INTERVAL_S = 10.0
#: Stages as the display names them: counter name prefix → column.
COLUMNS = (("found", ("documents found", "web pages found")), ("prepared", ("documents prepared",)),
           ("written", ("documents written",)))


def totals(folder: str) -> dict[str, int]:
    """The counts the workers wrote so far, by column."""
    sums = dict.fromkeys((name for name, _ in COLUMNS), 0)
    for path in glob.glob(os.path.join(folder, "*.json")):
        try:
            with open(path, encoding="utf-8") as handle:
                what, total = json.load(handle)
        except (OSError, ValueError):
            continue
        for name, prefixes in COLUMNS:
            if what.startswith(prefixes):
                sums[name] += int(total)
    return sums


def line(sums: dict[str, int], elapsed: float) -> str:
    """The progress line; before any count arrives (or on a cluster, whose workers keep theirs) the time only."""
    minutes, seconds = divmod(int(elapsed), 60)
    clock = f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"
    if not any(sums.values()):
        return f"crawling · {clock}"
    rate = sums["written"] / elapsed if elapsed > 0 else 0.0
    return (f"found {sums['found']:,} · prepared {sums['prepared']:,} · written {sums['written']:,} "
            f"· {rate:,.0f}/s · {clock}")


class LiveProgress:
    """``with LiveProgress(mode):`` around a pipeline run; mode is "live", "lines" or "quiet"."""

    def __init__(self, mode: str):
        self.mode = mode
        self.folder = tempfile.mkdtemp(prefix="beamtrawl-progress-")
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="beamtrawl-progress", daemon=True)

    @staticmethod
    def mode_for(quiet: bool, stream=sys.stderr) -> str:
        if quiet:
            return "quiet"
        return "live" if stream.isatty() and os.environ.get("TERM") != "dumb" else "lines"

    def __enter__(self) -> Self:
        os.environ[PROGRESS_DIR_ENV] = self.folder  # inherited by the local runner's worker processes
        if self.mode != "quiet":
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
        os.environ.pop(PROGRESS_DIR_ENV, None)
        for path in glob.glob(os.path.join(self.folder, "*")):
            os.unlink(path)
        os.rmdir(self.folder)

    def _run(self) -> None:
        if self.mode == "lines":
            while not self.stop.wait(LOG_INTERVAL_S):
                print(line(totals(self.folder), time.monotonic() - self.started), file=sys.stderr, flush=True)
            return
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        with Live(Text(""), console=Console(stderr=True), transient=True, refresh_per_second=4) as live:
            while not self.stop.wait(0.25):
                live.update(Text(line(totals(self.folder), time.monotonic() - self.started)))
