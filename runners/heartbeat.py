"""A local worker's heartbeat, and the driver's watch over it: a worker that stops answering, or stops moving,
ends the crawl within a bound (issue 27).

A worker that dies is heard (runners/direct.py). One that is stopped (SIGSTOP, a debugger), frozen, or blocked
for ever in the middle of an element (a write into the pipe of a preparing child that never reads) does not
end, and the runner would wait for its answers for ever. So every worker process beats: a thread writes, every
:data:`BEAT_S`, how long its active bundle has stayed on one element without working (:class:`_Idle`) into a
file the driver made for it. The driver (:class:`Watch`) takes a worker for dead when the file has not been
written for the bound (the process does not run) or when what it says passes the bound (it runs, but waits
and does not move on).

The bound, ``--worker_stall_timeout`` (seconds, 0: never), must pass what one element may legitimately keep a
worker waiting: preparation is the slow part, bounded per preparator and document by ``preparation.timeout`` (the
preparing child is killed past it and a new one goes on with the next preparator), and a DoFn may wait for a
few documents in flight at once. :func:`default_bound`: ten such timeouts, at least :data:`MIN_DEFAULT_S`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time

from apache_beam.options.pipeline_options import PipelineOptions
from beamtrawl.runners.options import option

log = logging.getLogger(__name__)

#: The environment variable naming a worker's heartbeat file.
ENV = "BEAMTRAWL_HEARTBEAT"
#: Seconds between two beats.
BEAT_S = 1.0
#: A bundle's thread that used this much CPU since the last beat is working, not waiting.
WORKING_CPU_S = 0.005
#: The default bound is this many preparation timeouts …
TIMEOUTS_PER_BOUND = 10
#: … and at least this many seconds.
MIN_DEFAULT_S = 600.0
_WIDTH = 16  # bytes of one beat: the seconds on one element, right-aligned


class StallOptions(PipelineOptions):
    """The local runner's bound on a worker that neither answers nor moves on."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--worker_stall_timeout", type=seconds, default=None,
            help="seconds after which a local worker that has not answered, or has waited on one element, is "
                 "taken for dead and the crawl stops (0: never; default: ten preparation timeouts, at least "
                 "600)")


def seconds(text: str) -> float:
    """The bound given as ``text``: a number of seconds, 0 or more."""
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value


def refused(beam_args: list[str]) -> str:
    """Why ``--worker_stall_timeout`` among ``beam_args`` is refused, or "" (before the crawl begins)."""
    given = option(beam_args, "worker_stall_timeout")
    try:
        given is None or seconds(given)
    except ValueError:
        return f"--worker_stall_timeout={given}: not a number of seconds, 0 or more"
    return ""


def default_bound(preparation_timeout: float) -> float:
    """The bound when none is given (module docstring: why)."""
    return max(MIN_DEFAULT_S, TIMEOUTS_PER_BOUND * preparation_timeout)


def bound(options: PipelineOptions) -> float:
    """The bound these options give (``--worker_stall_timeout``), or the default for the default preparation
    timeout when they give none (a crawl passes its own: pipeline/crawl.py)."""
    from beamtrawl.transforms.values import Bounds

    given = options.view_as(StallOptions).worker_stall_timeout
    return default_bound(Bounds().timeout) if given is None else given


# -- in the worker ----------------------------------------------------------------------------------------

def beat_from_environment() -> None:
    """Start beating into the file :data:`ENV` names, if it names one. Before Beam's harness is made: it is
    remembered as it is made, so that the beats can say how long its bundles stay on one element."""
    path = os.environ.get(ENV)
    if not path:
        return
    from apache_beam.runners.worker import sdk_worker_main

    harnesses = []

    class Remembered(sdk_worker_main.SdkHarness):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            harnesses.append(self)

    sdk_worker_main.SdkHarness = Remembered
    beat(path, harnesses)


def beat(path: str, harnesses: list, stop: threading.Event | None = None) -> None:
    """Beat into ``path`` for these harnesses (a list that may grow) from a thread of this process, until ``stop``
    is set. The file is unlinked once open (the driver reads its own descriptor): none is left behind, however the
    crawl ends."""
    fd = os.open(path, os.O_WRONLY)
    with contextlib.suppress(OSError):
        os.unlink(path)
    threading.Thread(target=_beat, args=(fd, harnesses, stop or threading.Event()), name="beamtrawl-heartbeat",
                     daemon=True).start()


def _beat(fd: int, harnesses: list, stop: threading.Event) -> None:
    idle, last = _Idle(), time.monotonic()
    try:
        while True:
            now = time.monotonic()
            os.pwrite(fd, f"{idle.longest(harnesses, now - last):{_WIDTH}.1f}".encode()[:_WIDTH], 0)
            last = now
            if stop.wait(BEAT_S):
                return
    finally:
        os.close(fd)


class _Idle:
    """How long each active bundle of a worker has stayed on one element without working: its thread took no
    new element (Beam's state sampler counts a transition for each) and used less than :data:`WORKING_CPU_S`
    of CPU since the last beat. A long element that computes (a folder of a million entries listed in one
    call) is not idle; one that waits (for a preparing child, in a write into its pipe) is."""

    def __init__(self):
        self.seen: dict[str, tuple[int, float, float]] = {}  # instruction: (transitions, CPU s, idle s)

    def longest(self, harnesses: list, elapsed: float) -> float:
        seen = {}
        try:
            for harness in harnesses:
                for instruction, (_bundle, processor) in list(
                        harness._bundle_processor_cache.active_bundle_processors.items()):
                    info = processor.state_sampler.get_info()
                    cpu = _cpu_s(info.tracked_thread)
                    transitions, cpu_before, idle = self.seen.get(instruction, (-1, cpu, 0.0))
                    moved = transitions != info.transition_count or cpu - cpu_before >= WORKING_CPU_S
                    seen[instruction] = (info.transition_count, cpu, 0.0 if moved else idle + elapsed)
        except Exception:  # a bundle that ends as it is looked at: the next beat sees the next
            log.debug("heartbeat: the bundles could not be read", exc_info=True)
        self.seen = seen
        return max((idle for _transitions, _cpu, idle in seen.values()), default=0.0)


def _cpu_s(thread: threading.Thread | None) -> float:
    """The CPU seconds ``thread`` used, or 0 where that cannot be known."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError, TypeError):
        return 0.0


# -- in the driver ----------------------------------------------------------------------------------------

class Watch:
    """The driver's side of one worker's heartbeat: the file it beats into (``path``, for :data:`ENV`), and
    :meth:`stalled`; :meth:`close` once the worker has ended."""

    def __init__(self):
        try:
            self._fd, self.path = tempfile.mkstemp(prefix="beamtrawl-heartbeat-")
        except OSError as err:  # no temporary folder to write in: the worker runs unwatched, as Beam's own do
            log.warning("a worker runs without a bound on its stalls: its heartbeat file: %s", err)
            self._fd, self.path = -1, ""
            return
        self._last = os.fstat(self._fd).st_mtime_ns
        self._heard = time.monotonic()  # a worker not yet beating is as silent as one that stopped

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def stalled(self, pid: int, bound: float) -> str:
        """Why the worker ``pid`` is taken for dead (a sentence's end), or "" while it beats and moves on."""
        if not bound or self._fd < 0:
            return ""
        now, written = time.monotonic(), os.fstat(self._fd).st_mtime_ns
        if written != self._last:
            self._last, self._heard = written, now
        if now - self._heard > bound:
            stopped = " (it was stopped)" if _state(pid) in ("T", "t") else ""
            return f"did not answer for {now - self._heard:.0f} s{stopped}"
        with contextlib.suppress(ValueError):
            stuck = float(os.pread(self._fd, _WIDTH, 0) or 0)
            if stuck > bound:
                return f"waited on one element for {stuck:.0f} s"
        return ""


def _state(pid: int) -> str:
    """The process's state letter (Linux's /proc), or ""."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
