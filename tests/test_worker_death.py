"""A local worker that dies at any moment — waiting to be given its work, just connected, in the middle of a
bundle, in the runner's clean-up — or is stopped in the middle of a bundle, with its preparing child, ends the
crawl within a bound: one line naming the cause, exit 2, no process of the crawl left, and the next crawl
converges (runners/direct.py, runners/forked_workers.py, runners/heartbeat.py).

Real crawls, each worker SIGKILLed at a chosen moment by a ``sitecustomize`` on ``PYTHONPATH`` (it runs in
the command, so forked workers inherit it, and in every worker Beam starts) or by the test itself; each crawl
is bounded by a timeout, so a hang fails instead of stalling the suite. Observed before: a forked worker
killed while it waited, or Beam's own first worker killed, hung the crawl in Beam's clean-up forever."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import beamtrawl_command

REPO = Path(__file__).resolve().parent.parent
#: Seconds a crawl of a few files may take on a loaded machine; a hang is far beyond it.
BOUND_S = 240
#: Kills a worker (a process given Beam's control endpoint) when Beam's harness logs a message starting with
#: $WORKER_KILLED_AT, or when it opens the file named by $WORKER_KILLED_AT's ``open:NAME``. With $NO_FORK the
#: command starts a thread first, so no worker is forked (runners/forked_workers.py forks single-threaded only).
#: With $WORKER_STOPPED_AT's ``open:NAME`` a worker that opens NAME SIGSTOPs its preparing child, once it has
#: one, and then itself, and notes the time in the file "stopped" beside this hook. With
#: $COMMAND_WORKER_WAITS_AT's ``open:NAME`` the command's own worker (a thread of the command) sleeps an hour
#: when it opens NAME.
HOOK = """\
import logging
import os
import re
import signal
import sys
import threading
import time

WHEN = os.environ.get("WORKER_KILLED_AT", "")
STOP_AT = os.environ.get("WORKER_STOPPED_AT", "")
WAIT_AT = os.environ.get("COMMAND_WORKER_WAITS_AT", "")


def _die_if_worker():
    if "CONTROL_API_SERVICE_DESCRIPTOR" in os.environ:
        os.kill(os.getpid(), signal.SIGKILL)


class _KillAt(logging.Filter):
    def filter(self, record):
        if WHEN and record.getMessage().startswith(WHEN):
            _die_if_worker()
        return True


def _children(pid):
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[1] == str(pid):
                found.append(int(name))
        except (OSError, IndexError):
            pass
    return found


def _stop_with_child():
    me = os.getpid()
    deadline = time.monotonic() + 120
    while not (children := _children(me)) and time.monotonic() < deadline:
        time.sleep(0.01)
    for child in children:
        os.kill(child, signal.SIGSTOP)
    with open(os.path.join(os.path.dirname(__file__), "stopped"), "w") as note:
        note.write(str(time.time()))
    os.kill(me, signal.SIGSTOP)


def _on_open(event, args):
    if event != "open":
        return
    name = "open:" + os.path.basename(str(args[0]))
    if WAIT_AT == name and "CONTROL_API_SERVICE_DESCRIPTOR" not in os.environ \
            and threading.current_thread() is not threading.main_thread():
        time.sleep(3600)  # the command's own worker, waiting on one element
    if WHEN == name:
        _die_if_worker()
    if STOP_AT == name and "CONTROL_API_SERVICE_DESCRIPTOR" in os.environ:
        threading.Thread(target=_stop_with_child, daemon=True).start()


logging.getLogger("apache_beam.runners.worker.sdk_worker").addFilter(_KillAt())
sys.addaudithook(_on_open)
if os.environ.get("NO_FORK"):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
"""


@pytest.fixture
def corpus(tmp_path, make_config):
    """Six text files and a page the preparing child reads; the crawl's configuration and its process mark."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(6):
        (root / f"note{i}.txt").write_text(f"note {i} harbour lantern")
    (root / "page.html").write_text("<html><body><p>a page the preparing child reads</p></body></html>")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    return make_config(root), hook


def crawl(config: Path, hook: Path | None = None, *options: str, **env: str) -> tuple[subprocess.Popen, str]:
    """Start a quiet crawl of ``config`` with the kill hook, ``options`` and ``env``; returns it and its process
    mark."""
    mark = uuid.uuid4().hex
    extra = {"PYTHONPATH": str(hook)} if hook else {}
    proc = subprocess.Popen(beamtrawl_command("crawl", str(config), "--direct_num_workers=2", "--quiet", *options),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BEAMTRAWL_TEST_CRAWL": mark, **extra, **env})
    return proc, mark


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the crawl did not end within {BOUND_S} s") from None


def processes_marked(mark: str) -> set[int]:
    """The processes whose environment holds this crawl's mark (ended ones left out)."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"BEAMTRAWL_TEST_CRAWL={mark}".encode() in (proc / "environ").read_bytes() \
                    and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.add(int(proc.name))
        except OSError:
            pass
    return found


KILLED = re.escape("FAILED: the pipeline failed: WorkerDied: a worker process ended unexpectedly (exit code -9: "
                   "killed by SIGKILL); the crawl stopped")


def assert_stopped_with_one_line(proc: subprocess.Popen, mark: str, line: str = KILLED) -> None:
    """The crawl ended with exit 2 and the one line (``line``: a regular expression), and left no process."""
    out, err = finish(proc)
    assert proc.returncode == 2, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAILED:")]
    assert len(failed) == 1 and re.fullmatch(line, failed[0]), out
    assert "Traceback" not in err and err.strip() == "", err  # --quiet: the one line only
    deadline = time.monotonic() + 10  # a killed worker's preparing child ends when its input closes
    while processes_marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_marked(mark)


def waiting_forks(pid: int) -> list[int]:
    """The workers forked from the command ``pid`` that wait for their work: its command line and name (given
    its work, a worker is called "beamtrawl-work")."""
    found = []
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            if Path(f"/proc/{child}/cmdline").read_bytes() == command \
                    and Path(f"/proc/{child}/comm").read_text().strip() != "beamtrawl-work":
                found.append(int(child))
    except OSError:  # it ended meanwhile
        pass
    return found


def test_forked_workers_killed_while_they_wait_end_the_crawl(corpus):
    """Both (either may be the one the runner takes first; one unused would not matter)."""
    config, _hook = corpus
    proc, mark = crawl(config)
    deadline = time.monotonic() + BOUND_S
    while len(waiting := waiting_forks(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert len(waiting) == 2, "the two workers were not forked"
    for pid in waiting:
        os.kill(pid, signal.SIGKILL)
    assert_stopped_with_one_line(proc, mark)


@pytest.mark.parametrize("moment, no_fork", [
    ("Control channel established", "1"),  # Beam's own first worker, as it connects
    ("open:note3.txt", ""),  # a forked worker in the middle of a bundle
    ("No more requests from control plane", ""),  # a forked worker told it is done
])
def test_a_worker_killed_at_any_moment_ends_the_crawl_and_the_next_converges(corpus, moment, no_fork):
    config, hook = corpus
    proc, mark = crawl(config, hook, WORKER_KILLED_AT=moment, NO_FORK=no_fork)
    assert_stopped_with_one_line(proc, mark)
    if moment.startswith("open:"):
        again, _mark = crawl(config)
        out, err = finish(again)
        assert again.returncode == 0 and "index holds 7" in out, out + err


#: The bound the stopped worker's test gives: short, and past what a bundle of this corpus takes under load.
STALL_S = 20


def test_a_worker_stopped_mid_bundle_with_its_preparing_child_ends_the_crawl_within_the_bound(corpus):
    """SIGSTOP, not death: nothing is heard, the worker's heartbeat goes silent; the crawl ends within the
    bound (and the grace of ending the processes), names the cause, and the next crawl converges."""
    config, hook = corpus
    proc, mark = crawl(config, hook, f"--worker_stall_timeout={STALL_S}", WORKER_STOPPED_AT="open:page.html")
    assert_stopped_with_one_line(proc, mark, re.escape(
        "FAILED: the pipeline failed: WorkerDied: a worker process did not answer for ") + r"\d+" + re.escape(
        f" s (it was stopped); it was ended and the crawl stopped (bound: --worker_stall_timeout={STALL_S})"))
    stopped = float((hook / "stopped").read_text())
    assert time.time() - stopped < STALL_S + 30, "the crawl did not end within the bound"
    again, _mark = crawl(config)
    out, err = finish(again)
    assert again.returncode == 0 and "index holds 7" in out, out + err


def test_the_commands_own_worker_waiting_on_one_element_ends_the_crawl_within_the_bound(corpus):
    """runners/forked_workers.py, ``--worker_in_command``: the worker is a thread of the command, which cannot be
    ended apart; one that waits on an element past the bound fails the run with the one line, and the next crawl
    converges."""
    config, hook = corpus
    began = time.monotonic()
    proc, mark = crawl(config, hook, f"--worker_stall_timeout={STALL_S}", "--direct_num_workers=1",
                       "--worker_in_command", COMMAND_WORKER_WAITS_AT="open:page.html")
    assert_stopped_with_one_line(proc, mark, re.escape(
        "FAILED: the pipeline failed: WorkerDied: the command's own worker waited on one element for ") + r"\d+" +
        re.escape(f" s; the crawl stopped (bound: --worker_stall_timeout={STALL_S})"))
    assert time.monotonic() - began < STALL_S + 60, "the crawl did not end within the bound"
    again, _mark = crawl(config, None, "--direct_num_workers=1", "--worker_in_command")
    out, err = finish(again)
    assert again.returncode == 0 and "index holds 7" in out, out + err


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_a_bound_that_is_no_number_of_seconds_is_one_line_before_the_crawl(corpus, value):
    config, _hook = corpus
    proc, _mark = crawl(config, None, f"--worker_stall_timeout={value}")
    out, err = finish(proc)
    assert proc.returncode == 2 and out == "", out + err
    assert err.strip().splitlines()[-1] == f"beamtrawl: error: --worker_stall_timeout={value}: not a number of " \
                                            "seconds, 0 or more", err
    assert not (config.parent / "index.sqlite").exists()
