"""Progress lines while a crawl runs, written by each worker straight to its stderr.

Beam forwards worker logs through its own channel, which the command line mutes; progress goes to a
logger of its own so it reaches the terminal on the local runner (and the worker logs on a cluster).
"""

from __future__ import annotations

import logging
import os
import sys
import time

INTERVAL_S = 5.0


def _logger() -> logging.Logger:
    logger = logging.getLogger("beamtrawl.progress")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def timed(counter, outputs) -> list:
    """Run a DoFn's output generator to the end, adding its milliseconds to a stage counter; outputs
    are returned as a list so the stages fused after it do not count as this one's time."""
    started = time.perf_counter()
    results = list(outputs)
    counter.inc(int((time.perf_counter() - started) * 1000))
    return results


class Progress:
    """Counts one stage's work in one DoFn instance; says so every few seconds."""

    def __init__(self, what: str):
        self.what = what
        self.total = 0
        self.last = time.monotonic()

    def add(self, n: int = 1) -> None:
        self.total += n
        now = time.monotonic()
        if now - self.last >= INTERVAL_S:
            self.last = now
            _logger().info("… %s %d so far (worker %d)", self.what, self.total, os.getpid())
