"""What a crawl shows while it runs: a live line on a terminal (rich), a plain line once a minute when the
output is a log (CI), nothing with ``--quiet``. While documents are found the line counts them; once they are
compared with the index the number to prepare is known, and the line becomes a bar with the share prepared,
the rate of the slowest stage at work and the time left.

Workers on this machine keep their stages' counts in files of a folder the command names in the
environment (transforms/progress.py); a thread here adds them up. Workers on a cluster do not see
that folder: they log their counts as before, and the cluster's own UI shows the job.
"""

from __future__ import annotations

import glob
import os
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Self

from beamtrawl.transforms.progress import PROGRESS_DIR_ENV, read_count

#: Seconds between lines when the output is not a terminal (a log): one a minute, not a wall of them.
LOG_INTERVAL_S = 60.0
#: Seconds of history a stage's rate is measured over; a stage whose count moved within them is active.
RATE_WINDOW_S = 30.0
#: Stages as the display names them: counter name prefix → column.
COLUMNS = (("found", ("documents found", "web pages found")), ("compared", ("documents compared",)),
           ("queued", ("documents to prepare",)), ("prepared", ("documents prepared",)),
           ("written", ("documents written",)))
#: The stages after discovery, by the word the display uses for one at work.
_WORKING = (("prepared", "preparing"), ("written", "writing"))
_BAR = 10


def totals(folder: str) -> dict[str, int]:
    """The counts the workers wrote so far, by column."""
    sums = dict.fromkeys((name for name, _ in COLUMNS), 0)
    for path in glob.glob(os.path.join(folder, "*.json")):
        count = read_count(path)
        if count is None:
            continue
        what, total = count
        for name, prefixes in COLUMNS:
            if what.startswith(prefixes):
                sums[name] += int(total)
    return sums


class Rates:
    """Each stage's documents per second over the last RATE_WINDOW_S, from the counts sampled so far."""

    def __init__(self):
        self.samples: deque[tuple[float, dict[str, int]]] = deque()

    def add(self, now: float, sums: dict[str, int]) -> None:
        self.samples.append((now, dict(sums)))
        while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_S:
            self.samples.popleft()

    def of(self) -> dict[str, float]:
        """{column: rate} of the stages whose count moved in the window (the active ones)."""
        if len(self.samples) < 2:
            return {}
        (t0, first), (t1, last) = self.samples[0], self.samples[-1]
        if t1 <= t0:
            return {}
        return {name: (last[name] - first[name]) / (t1 - t0) for name in last if last[name] > first.get(name, 0)}


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"


def _short_clock(seconds: float) -> str:
    """``2:43``, ``1:02:05``: a time left, as short as it can be."""
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}" if minutes >= 60 else f"{minutes}:{seconds:02d}"


def to_prepare(sums: dict[str, int]) -> tuple[int, bool]:
    """(the documents this crawl prepares, whether that is exact). Known once documents are compared with the
    index (discovery is over then): extrapolated from those compared so far to all that were found."""
    if sums["compared"] >= sums["found"] or not sums["compared"]:
        return sums["queued"], True
    return max(sums["queued"], round(sums["queued"] * sums["found"] / sums["compared"])), False


def line(sums: dict[str, int], elapsed: float, rates: dict[str, float] | None = None) -> str:
    """The progress line. While documents are found: how many, how fast. Once the total to prepare is known: a
    bar with the share prepared, the rate of the slowest active stage and the time left. Before any count
    arrives (or on a cluster, whose workers keep theirs): the time only."""
    rates = rates or {}
    clock = _clock(elapsed)
    if not any(sums.values()):
        return f"crawling · {clock}"
    if not sums["compared"]:
        rate = f" · {rates['found']:,.0f}/s" if rates.get("found") else ""
        return f"finding documents: found {sums['found']:,}{rate} · {clock}"
    total, exact = to_prepare(sums)
    if not total:
        return f"comparing with the index: {sums['compared']:,} of {sums['found']:,} found · nothing to prepare yet · {clock}"
    share = min(sums["prepared"], total) / total
    filled = round(share * _BAR)
    parts = ["█" * filled + "░" * (_BAR - filled) + f" {share:.0%}",
             f"{sums['prepared']:,}/{'' if exact else '~'}{total:,} prepared", f"{sums['written']:,} written"]
    active = [(rates[name], word) for name, word in _WORKING if rates.get(name)]
    if active:  # the slowest stage at work sets the pace; the time left is that of the stage furthest behind
        rate, word = min(active)
        parts.append(f"{rate:,.1f}/s {word}" if rate < 10 else f"{rate:,.0f}/s {word}")
        left = max((total - sums[name]) / rates[name] for name, _ in _WORKING if rates.get(name))
        return " · ".join([*parts, f"{_short_clock(max(left, 0))} left"])
    return " · ".join([*parts, clock])


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

    def _sample(self, rates: Rates) -> str:
        now, sums = time.monotonic(), totals(self.folder)
        rates.add(now, sums)
        return line(sums, now - self.started, rates.of())

    def _run(self) -> None:
        rates = Rates()
        if self.mode == "lines":  # sampled as often as a terminal's line, for the rates; printed once a minute
            last = time.monotonic()
            while not self.stop.wait(1.0):
                text = self._sample(rates)
                if time.monotonic() - last >= LOG_INTERVAL_S:
                    last = time.monotonic()
                    print(text, file=sys.stderr, flush=True)
            return
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        with Live(Text(""), console=Console(stderr=True), transient=True, refresh_per_second=4) as live:
            while not self.stop.wait(0.25):
                live.update(Text(self._sample(rates), no_wrap=True, overflow="ellipsis"))
