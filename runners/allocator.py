"""glibc's allocator held to what a crawl's processes use, not what they once used (issue 27, target 4).

On the local runner the command hands each stage's whole input to its workers, and the workers send their output
back, through gRPC threads. glibc gives every thread that allocates an arena of its own (up to eight per core),
and a buffer of over 128 KB freed raises the size from which it maps memory apart, so the next buffers of a
stage's input come from the arenas and stay there once freed: the command's resident memory grew by ~50 MiB at
100,000 files the moment the preparation's input went out, and each worker's by ~20, and neither came back
(``/proc/PID/smaps``: the growth was in thread arenas, not in Python objects). Two arenas and a fixed threshold of
128 KB, above which a block is mapped on its own and returned to the system when freed, keep that memory the
size of what is in use (docs/scaling.md has the figures).

Set by ``mallopt`` in the command before it forks its workers (they inherit it) and in the environment for the
processes started after (workers Beam starts, the preparing children), unless the environment names a value
already. Elsewhere than glibc nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

#: glibc's tunables (``mallopt`` parameter, environment variable, value).
_M_ARENA_MAX, _M_MMAP_THRESHOLD, _M_TRIM_THRESHOLD = -8, -3, -1
SETTINGS = ((_M_ARENA_MAX, "MALLOC_ARENA_MAX", 2),
            (_M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", 128 * 1024),
            (_M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", 128 * 1024))


def bound() -> None:
    """Hold this process's allocator and that of the processes it starts to :data:`SETTINGS` (see above)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): its allocator is left as it is
        return
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    for parameter, variable, value in SETTINGS:
        if variable in os.environ:  # the user's own choice: glibc read it when this process started
            continue
        os.environ[variable] = str(value)
        if not mallopt(parameter, value):
            log.debug("mallopt(%d, %d) refused", parameter, value)
