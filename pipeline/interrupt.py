"""Ctrl-C during a crawl: one line, a partial report, every process of the crawl stopped, exit 130.

A terminal sends SIGINT to the whole process group. Left to Python, the driver, the local runner's workers
and their preparing processes each printed a ``KeyboardInterrupt`` traceback, and Beam's runner waited for
workers that were gone. So the workers are born ignoring SIGINT (runners/direct.py), as
are the preparing processes they start (inherited), and the driver's handler here ends them all (every
process below it), writes what the crawl knew so far and exits at once, without unwinding through Beam. Nothing is lost by that: deletes run last, in the
driver, and upserts are idempotent, so the next crawl goes on from where this one stopped (DESIGN.md,
invariant 2).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from datetime import UTC, datetime

#: The exit code of a command ended by SIGINT (128 + 2), as shells report it.
EXIT_INTERRUPTED = 130
#: What the user reads; the deletes (the very last step) may have begun, and then it says so.
INTERRUPTED = "interrupted: nothing was deleted; the next crawl goes on from here"
INTERRUPTED_DELETING = ("interrupted during the deletes: the report lists those that were due; the next crawl "
                        "deletes what is left")
#: Seconds the processes of the crawl get to end after SIGTERM before they are killed.
GRACE_S = 1.0


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children first), read from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_processes(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL for those still there after GRACE_S."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE_S
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Interrupt:
    """``with Interrupt(write) as stop:`` around a crawl in the command's main thread. On SIGINT (or SIGTERM)
    ``write(stop)`` is called to write the partial report and return the lines to print; then the
    command exits with 128 + the signal's number (EXIT_INTERRUPTED for SIGINT). ``stop.deleting`` is set by
    the driver while its deletes run."""

    def __init__(self, write):
        self.write = write
        self.deleting = False
        self.work_dir = ""  # the crawl's own work folder, once it has one: removed, as a crawl's end does
        self.began = time.monotonic()
        self.exit_code = EXIT_INTERRUPTED
        self.started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self._previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, _frame) -> None:
        self.exit_code = 128 + signum  # as a shell reports a command a signal ended: 130 for SIGINT, 143 for SIGTERM
        for sig in (*self._previous, signal.SIGUSR1):  # SIGUSR1: a worker died (runners/direct.py) — we end them
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C does not interrupt the clean-up
        threading.excepthook = lambda _args: None  # Beam's threads that waited for the ended workers
        end_processes(descendants(os.getpid()))
        if self.work_dir and "://" not in self.work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        try:
            lines = self.write(self)
        except Exception as err:  # noqa: BLE001 - the exit must happen whatever the report does
            lines = [INTERRUPTED_DELETING if self.deleting else INTERRUPTED,
                     f"the partial report could not be written ({err})"]
        for line in lines:
            print(line, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
        os._exit(self.exit_code)
