"""Python's cyclic garbage collector paused while a reader makes many short-lived objects that hold no cycles.

An index's snapshot answer is parsed into a dictionary and a few lists per document, every one of which the
collector counts as a new container: a page of 10,000 documents set off ~80 young collections and, in a
process holding Beam (~180,000 objects), full ones too, which walk every object alive. Reading 20,000
documents from OpenSearch cost 0.30–0.43 CPU-s with the collector and 0.16 without it (bench/opensearch_bench.py's
read, one reader): the collector was half the client's work, and collected nothing (the parsed answers are
trees, freed by reference counting). Readers in several threads share one pause: the collector runs again
when the last one leaves, unless it was off when the first came.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pausing = 0  # readers inside paused()
_was_enabled = False  # whether the collector ran when the first of them came


@contextmanager
def paused() -> Iterator[None]:
    """Run the block without the cyclic collector (cycles made meanwhile are collected after it)."""
    global _pausing, _was_enabled
    with _lock:
        if _pausing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausing += 1
    try:
        yield
    finally:
        with _lock:
            _pausing -= 1
            if _pausing == 0 and _was_enabled:
                gc.enable()
