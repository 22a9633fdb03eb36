"""A stage's account of its work: counts for the report, busy time, and progress lines.

Counts without a reason (``unchanged``, ``read``, …) are tallied per bundle and emitted once per kind
when the bundle finishes, instead of one element per document. Progress lines go to a logger of
their own, straight to the worker's stderr: Beam forwards worker logs through its own channel,
which the command line mutes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
import weakref
from collections import Counter

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue
from beamtrawl.transforms.records import event

INTERVAL_S = 5.0
FILE_INTERVAL_S = 0.5


def _logger() -> logging.Logger:
    logger = logging.getLogger("beamtrawl.progress")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


class Tally:
    """Routes a DoFn's events: problems (with a reason) go out at once, plain counts are summed."""

    def __init__(self, tag: str):
        self.tag = tag
        self.counts: Counter = Counter()

    def __call__(self, record):
        """The output for ``record`` now, or None when it was only counted."""
        if record.reason:
            return beam.pvalue.TaggedOutput(self.tag, record)
        self.counts[record.kind] += record.count
        return None

    def count(self, kind: str, n: int = 1) -> None:
        self.counts[kind] += n

    def flush(self):
        """For ``finish_bundle``: one event per kind counted in this bundle."""
        for kind, n in self.counts.items():
            yield beam.pvalue.TaggedOutput(
                self.tag, WindowedValue(event(kind, count=n), MIN_TIMESTAMP, [GlobalWindow()]))
        self.counts.clear()


def timed(counter, outputs) -> list:
    """Run a DoFn's output generator to the end, adding its microseconds to a stage counter; outputs
    are returned as a list so the stages fused after it do not count as this one's time."""
    started = time.perf_counter()
    results = list(outputs)
    counter.inc(int((time.perf_counter() - started) * 1_000_000))
    return results


def busy(counter, records):
    """Stream a DoFn's outputs (a large listing or host must not be held in memory, as :func:`timed` would),
    adding to ``counter`` only the microseconds spent producing them, not those of the stages fused after."""
    started = time.perf_counter()
    for record in records:
        counter.inc(int((time.perf_counter() - started) * 1_000_000))
        yield record
        started = time.perf_counter()
    counter.inc(int((time.perf_counter() - started) * 1_000_000))


#: Set by the command (pipeline/progress.py) for workers on its machine: a folder where each stage's
#: counts are kept for its live display, instead of log lines.
PROGRESS_DIR_ENV = "BEAMTRAWL_PROGRESS_DIR"


def read_count(path: str) -> tuple[str, int] | None:
    """What a :class:`Progress` file says (its stage and count), or None when it cannot be read whole: a read
    that caught a write half done (the two totals differ, or the JSON is cut) is tried again a few times."""
    for _attempt in range(3):
        try:
            with open(path, "rb") as handle:
                what, total, again = json.loads(handle.read(4096))
        except (OSError, ValueError, TypeError):
            continue
        if total == again and isinstance(what, str) and isinstance(total, int):
            return what, total
    return None


class Progress:
    """Counts one stage's work in one DoFn instance; says so every few seconds — in a file the command's
    live display reads when it runs on this machine, else as a log line."""

    def __init__(self, what: str):
        self.what = what
        self.total = 0
        self.written = 0  # the count in this instance's file
        self.folder = os.environ.get(PROGRESS_DIR_ENV, "")
        self.name = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.last = 0.0 if self.folder else time.monotonic()  # a display shows the first count at once
        self.fd = None  # of this instance's file in the folder, open from its first write

    def add(self, n: int = 1) -> None:
        self.total += n
        now = time.monotonic()
        if now - self.last >= (INTERVAL_S if not self.folder else FILE_INTERVAL_S):
            self.last = now
            if self.folder:
                self._write()
            else:
                _logger().info("… %s %d so far (worker %d)", self.what, self.total, os.getpid())

    def flush(self) -> None:
        """For ``finish_bundle``: the file gets the count the interval held back, so a display ends at the
        real count (it stopped short: the last documents of a bundle come within the interval)."""
        if self.folder and self.total != self.written:
            self._write()

    def _write(self) -> None:
        """Write the count over the one before, in place: ``[what, total, total]`` in one ``pwrite`` at the file's
        start (a count never shrinks, so the record never gets shorter and nothing of an older one is left behind;
        a reader that catches half of one sees the two totals differ, :func:`read_count`). A new file renamed over
        the last made ext4 write the file's data out at each rename (its ``auto_da_alloc``): 10 ms of a worker's
        bundle thread, on a busy disk, twice a second per stage (issue 27). A display is no reason to fail."""
        try:
            if self.fd is None:
                self.fd = os.open(os.path.join(self.folder, self.name + ".json"), os.O_WRONLY | os.O_CREAT, 0o644)
                weakref.finalize(self, os.close, self.fd)
            os.pwrite(self.fd, json.dumps([self.what, self.total, self.total]).encode(), 0)
            self.written = self.total
        except OSError:
            self.folder = ""
