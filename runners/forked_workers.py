"""The local runner's worker processes, forked from the command before it does any work, so they start with Beam
and beamtrawl's modules already loaded.

A worker Beam starts itself (``WORKER_COMMAND``, runners/direct.py) is a new Python that imports Beam and
beamtrawl again: about 1.2 CPU-s each, measured for issue 27 (target 2: a one-file crawl in at most 2 s), and
it only begins once the graph is built and translated. :func:`prestart` forks them as soon as the command knows
it crawls on the local runner: right after Beam's import, before the command opens an index, starts a thread or
makes a gRPC object (a forked copy of any of those is unsafe). Each waits on a pipe. When the runner starts a
worker, :class:`ForkedFirst` hands one of them what Beam would have given a new process (its environment: the
control and logging endpoints, the pipeline options) and waits for it as Beam waits for its process, so a
worker that dies still ends the crawl (runners/direct.py). A pipeline that wants more workers than were
forked (a second pass, more workers than expected) gets a new process, as Beam's own; forked workers left
unused end when their pipe closes (:func:`release`, or the command's exit).

With ``--worker_in_command`` the first worker of a run is the command itself (:func:`_serve_in_command`): Beam's
harness in a thread, over the same control and data channels, beating and watched as the others are. One process
fewer is ~85-115 MiB fewer (issue 27, target 4), but the worker then shares the command's interpreter lock with the
runner's side of every data stream: preparation ran 10-20 % slower (docs/scaling.md), so it is not the default.

Every worker process, forked or new, is known while it runs, so a crawl whose worker died ends the others
(:func:`end_workers`; Beam's clean-up would wait for them for ever), and Beam's wait for a worker's end at the
end of a run is bounded (``STOP_S``). Each beats while it runs (runners/heartbeat.py): one that stops answering
or moving on for the bound is ended and fails as a worker that died (:class:`WorkerStalled`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import traceback

from apache_beam.options.pipeline_options import PipelineOptions
from beamtrawl.runners import heartbeat
from beamtrawl.runners.options import option

log = logging.getLogger(__name__)

#: What a forked worker is called once it works (``ps -o comm``, /proc/PID/comm; at most 15 bytes): its command
#: line is the command's own.
WORKER_NAME = "beamtrawl-work"
#: At most this many workers are forked (a count given by mistake, 10000, is left to Beam to start or refuse).
MAX_FORKED = 64
#: Forked workers waiting for their environment: (process id, write end of its pipe).
_WAITING: list[tuple[int, int]] = []
#: The process ids of the workers at work (forked or not), until they end; the worker id each serves.
_RUNNING: dict[int, str | None] = {}
#: Workers ended at the end of a run for not ending on their own: their work was done.
_ENDED_QUIETLY: set[int] = set()
#: Set by :func:`end_workers` until the next crawl: a worker registered after it ran is ended at once.
_ENDING = threading.Event()
#: Whether the first worker of each run works in this process (:func:`prestart`), and the run's taken slot.
_IN_COMMAND = [False]
_TAKEN: list[str | None] = []


#: Seconds the runner's clean-up waits for a worker told it is done before ending it (they take well under one).
STOP_S = 10.0
#: The bound of runners/heartbeat.py for the run at hand (seconds; 0: none), set by :func:`install`.
_STALL_S = [0.0]
#: The workers of the run at hand taken for dead for a stall: noted before they are ended, whose end the runner
#: may hear first (its data stream closes) and fail with a message of its own (:func:`stalled`).
_STALLED: list[WorkerStalled] = []


class InCommandOptions(PipelineOptions):
    """Whether the local runner's first worker is the command itself."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--worker_in_command", action="store_true",
            help="make the command the first of --direct_num_workers (one process fewer, ~100 MiB less memory; "
                 "preparation 10-20 %% slower, and a worker that crashes ends the command with it)")


class WorkerEnded(RuntimeError):
    """A worker that ended the crawl; the message is the crawl's one line."""


class WorkerStalled(WorkerEnded):
    """A worker that stopped answering or moving on (runners/heartbeat.py); a process was ended."""


def worker_count(runner: str | None, beam_args: list[str]) -> int:
    """How many workers the local runner will start for a crawl with these options, or 0 when it will not run
    them as processes, or not as runners/direct.py's (another runner, another running mode, a count that is not
    a plain number)."""
    from beamtrawl.runners import engine

    if engine(runner) != "direct" or (option(beam_args, "direct_running_mode") or "multi_processing") != \
            "multi_processing" or (option(beam_args, "runner") or "FnApiRunner") != "FnApiRunner":
        return 0  # a runner Beam makes (``-- --runner=DirectRunner``) starts its own workers: none forked
    try:
        count = int(option(beam_args, "direct_num_workers") or 0)
    except ValueError:
        return 0
    return min(count or os.cpu_count() or 1, MAX_FORKED) if count >= 0 else 0  # 0: one per core, as Beam


def prestart(count: int, in_command: bool = False) -> None:
    """Fork ``count`` workers that wait for :class:`ForkedFirst` to hand them their work (one fewer, the first
    worker of each run being this process, when ``in_command``). Forks only while this process runs a single
    thread (Python's; a native library's own threads handle fork themselves)."""
    _IN_COMMAND[0] = in_command and count > 0
    count -= _IN_COMMAND[0]
    if count <= 0:
        return
    import apache_beam.runners.worker.sdk_worker_main  # noqa: F401 - what each worker runs, loaded once here
    import beamtrawl.pipeline.graph  # the modules of every DoFn of a crawl
    import beamtrawl.transforms.preparators.isolation  # noqa: F401 - runners/local_worker.py's

    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # what is loaded stays shared: a worker's collections would touch, and so copy, every page of it
    for _ in range(count):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(write)
            _wait_and_serve(read)  # never returns
        os.close(read)
        _WAITING.append((pid, write))


def release(wait: bool = True) -> None:
    """End the forked workers nobody took: their pipe closes with nothing in it (``wait``: and wait for them)."""
    while _WAITING:
        pid, write = _WAITING.pop()
        os.close(write)
        if wait:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _wait_and_serve(read: int) -> None:
    """A forked worker: wait for the environment Beam gives a worker, then be one (runners/local_worker.py)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as WORKER_COMMAND's ``trap '' INT``
        for sig in (signal.SIGTERM, signal.SIGUSR1):  # the command's own handlers (pipeline/interrupt.py)
            signal.signal(sig, signal.SIG_DFL)
        if not sys.flags.safe_path and sys.path:  # what Python put first for the command (its folder, or the
            del sys.path[0]  # current one with ``python -m``): gone, as from a worker Beam starts with -P
        for _pid, sibling in _WAITING:  # an earlier worker's pipe, which must close when the command's does
            os.close(sibling)
        _WAITING.clear()
        with os.fdopen(read, "rb") as pipe:
            given = pipe.read()
        if not given:
            os._exit(0)
        os.environ.clear()
        os.environ.update(json.loads(given))
        _as_started()
        _name(WORKER_NAME)
        from beamtrawl.runners.local_worker import serve

        serve()
    except SystemExit as stop:
        sys.stderr.flush()
        os._exit(stop.code if isinstance(stop.code, int) else 1)
    except BaseException:  # noqa: BLE001 - a worker that fails exits non-zero, as Beam's own would
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def _as_started() -> None:
    """Logging as a new Python has it (the command routed its own: transforms/logs.py), so the worker's records
    go where a worker Beam starts sends them."""
    logging.captureWarnings(False)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("beamtrawl").setLevel(logging.NOTSET)


def _name(name: str) -> None:
    """Set this process's name (Linux's ``prctl(PR_SET_NAME)``); elsewhere it keeps the command's."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)


def install(command_line: str, stall_s: float) -> None:
    """Make the local runner's workers for ``command_line`` forked ones while any wait, every one of them known
    (:func:`end_workers`), taken for dead after ``stall_s`` without a heartbeat or a move (0: never), and
    waited for within a bound at the end. Idempotent."""
    from apache_beam.runners.portability import local_job_service
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    _ENDING.clear()
    _STALL_S[0] = stall_s
    _STALLED.clear()
    _TAKEN.clear()
    urn = worker_handlers.python_urns.SUBPROCESS_SDK
    if getattr(worker_handlers.WorkerHandler._registered_environments[urn][0], "_beamtrawl_forked", False):
        return
    ours = command_line.encode()

    class LocalWorker(local_job_service.SubprocessSdkWorker):
        """Beam's worker process: a forked one when given, else a new one; known while it runs."""

        def __init__(self, forked: tuple[int, int] | None, command: bytes, *args):
            super().__init__(command, *args)
            self._forked = forked

        def run(self):
            _run_worker(self._forked, self._worker_command_line, self._control_address, self._provision_info,
                        self._worker_id)

    class ForkedFirst(worker_handlers.SubprocessSdkWorkerHandler):
        """Beam's handler of a worker: the command itself first (:func:`prestart`), then a forked process while
        any wait, else a new one."""

        _beamtrawl_forked = True

        def start_worker(self):
            if _IN_COMMAND[0] and not _TAKEN and self._worker_command_line == ours:
                _TAKEN.append(self.worker_id)
                run = functools.partial(_serve_in_command, self)
            else:
                with contextlib.suppress(IndexError):  # none left: a new process
                    forked = None
                    forked = _WAITING.pop(0) if self._worker_command_line == ours else None
                self.worker = LocalWorker(forked, self._worker_command_line, self.control_address,
                                          self.provision_info, self.worker_id)
                run = self.worker.run
            self.worker_thread = threading.Thread(name="run_worker", target=run, daemon=self.worker_id in _TAKEN)
            self.worker_thread.start()

        def stop_worker(self):
            """Beam waits for the worker's end without a bound: a worker that never heard it was done (it
            never connected, or its runner stopped before telling it) would hang the crawl's end. One that
            does not end in time is ended, its work being done: no failure."""
            self.worker_thread.join(STOP_S)
            if self.worker_thread.is_alive() and self.worker_id in _TAKEN:
                log.warning("the command's own worker did not end within %s s of being told to", STOP_S)
            elif self.worker_thread.is_alive():
                log.warning("a worker did not end within %s s of being told to; it was ended", STOP_S)
                _end([pid for pid, serves in list(_RUNNING.items()) if serves == self.worker_id], quietly=True)
                self.worker_thread.join()

    worker_handlers.WorkerHandler.register_environment(urn, bytes)(ForkedFirst)


def _serve_in_command(handler) -> None:
    """Beam's harness for ``handler`` (a :class:`ForkedFirst`) in this process, made as a worker process makes
    it from its options, beating while it runs: one that waits on an element past the bound fails the run (it
    cannot be ended apart from the command). Its preparing children end with it, as a worker process's do."""
    from apache_beam.options.pipeline_options import DebugOptions
    from apache_beam.runners.portability.fn_api_runner.worker_handlers import FNAPI_RUNNER_CAPABILITIES
    from apache_beam.runners.worker import sdk_worker, sdk_worker_main
    from beamtrawl.transforms.preparators.isolation import end_children
    from google.protobuf import json_format

    options = PipelineOptions.from_dictionary(sdk_worker_main._load_pipeline_options(
        json_format.MessageToJson(handler.provision_info.provision_info.pipeline_options)))
    harness = sdk_worker.SdkHarness(
        handler.control_address, worker_id=handler.worker_id,
        state_cache_size=sdk_worker_main._get_state_cache_size_bytes(options),
        data_buffer_time_limit_ms=sdk_worker_main._get_data_buffer_time_limit_ms(
            options.view_as(DebugOptions).experiments or []),
        runner_capabilities=FNAPI_RUNNER_CAPABILITIES)
    watch, done = heartbeat.Watch(), threading.Event()
    if watch.path:
        heartbeat.beat(watch.path, [harness], done)
        threading.Thread(target=_watch_in_command, args=(handler, watch, done), name="beamtrawl-watch",
                         daemon=True).start()
    try:
        harness.run()
    except Exception as err:
        if not _STALLED:  # after a stall, the runner has its line already
            raise WorkerEnded(f"the command's own worker failed ({type(err).__name__}: {err}); the crawl "
                              "stopped") from err
    finally:
        done.set()
        watch.close()
        end_children()


def _watch_in_command(handler, watch: heartbeat.Watch, done: threading.Event) -> None:
    """Fail the run once the command's own worker stalls: its answers to the runner's pending instructions are
    errors (Beam's ``abort`` of them would leave the runner waiting for the bundle's data, which never ends)."""
    from apache_beam.portability.api import beam_fn_api_pb2

    while not done.wait(heartbeat.BEAT_S):
        if why := watch.stalled(os.getpid(), _STALL_S[0]):
            _STALLED.append(WorkerStalled(f"the command's own worker {why}; the crawl stopped (bound: "
                                          f"--worker_stall_timeout={_STALL_S[0]:g})"))
            for future in list(handler.control_conn._futures_by_id.values()):
                future.set(beam_fn_api_pb2.InstructionResponse(instruction_id=future.instruction_id,
                                                               error=str(_STALLED[-1])))
            return


def stalled() -> WorkerStalled | None:
    """The first worker of the run at hand taken for dead for a stall, if any."""
    return _STALLED[0] if _STALLED else None


def end_workers() -> None:
    """End every worker process the runner started, with whatever they started (their preparing children),
    and the forked ones waiting: SIGTERM, then SIGKILL (pipeline/interrupt.py). For a worker that died,
    whose siblings would otherwise work on, or wait forever for a runner that stopped."""
    _ENDING.set()  # first: a worker that registers from now on ends itself (_run_worker)
    waiting = [pid for pid, _write in _WAITING]
    release(wait=False)
    _end([*_RUNNING, *waiting])
    for pid in waiting:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _end(pids: list[int], quietly: bool = False) -> None:
    """End these processes and theirs (``quietly``: the workers among them have not failed)."""
    from beamtrawl.pipeline.interrupt import descendants, end_processes

    if quietly:
        _ENDED_QUIETLY.update(pids)
    end_processes([p for pid in pids for p in descendants(pid)] + pids)


def _run_worker(forked: tuple[int, int] | None, command: str, control_address: str, provision_info,
                worker_id: str | None) -> None:
    """Beam's ``SubprocessSdkWorker.run`` (Beam 2.73, pinned) with a forked worker for its ``Popen`` where one
    waits: serve its logs, give it the environment Beam gives a new process, wait for it, raise if it failed."""
    import grpc
    from apache_beam.portability.api import beam_fn_api_pb2_grpc, endpoints_pb2
    from apache_beam.runners.portability.fn_api_runner import worker_handlers
    from apache_beam.runners.portability.local_job_service import BeamFnLoggingServicer
    from apache_beam.utils import thread_pool_executor
    from google.protobuf import json_format, text_format

    options = [("grpc.http2.max_pings_without_data", 0), ("grpc.http2.max_ping_strikes", 0)]
    logging_server = grpc.server(thread_pool_executor.shared_unbounded_instance(), options=options)
    logging_port = logging_server.add_insecure_port("[::]:0")
    logging_server.start()
    beam_fn_api_pb2_grpc.add_BeamFnLoggingServicer_to_server(BeamFnLoggingServicer(), logging_server)
    environment = dict(
        os.environ,
        CONTROL_API_SERVICE_DESCRIPTOR=text_format.MessageToString(endpoints_pb2.ApiServiceDescriptor(
            url=control_address)),
        LOGGING_API_SERVICE_DESCRIPTOR=text_format.MessageToString(endpoints_pb2.ApiServiceDescriptor(
            url=f"localhost:{logging_port}")),
        PIPELINE_OPTIONS=json_format.MessageToJson(provision_info.provision_info.pipeline_options))
    if worker_id:
        environment["WORKER_ID"] = worker_id
    watch = heartbeat.Watch()
    environment[heartbeat.ENV] = watch.path
    try:
        if forked is None:
            with worker_handlers.SUBPROCESS_LOCK:
                process = subprocess.Popen(command, shell=True, env=environment)
            pid, wait = process.pid, process.wait
        else:
            pid, write = forked
            with contextlib.suppress(BrokenPipeError), os.fdopen(write, "wb") as pipe:  # one that died: its code
                pipe.write(json.dumps(environment).encode())

            def wait():
                return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        _RUNNING[pid] = worker_id
        if _ENDING.is_set():  # started as end_workers ran: it would be waited for in vain
            _end([pid], quietly=True)
        try:
            code = _watched(pid, wait, watch)
        finally:
            del _RUNNING[pid]
            quietly = pid in _ENDED_QUIETLY
            _ENDED_QUIETLY.discard(pid)
        if code and not quietly:
            raise RuntimeError(f"Worker subprocess exited with return code {code}")
    finally:
        watch.close()
        logging_server.stop(0)


def _watched(pid: int, wait, watch: heartbeat.Watch) -> int:
    """``wait()`` for the worker ``pid``'s exit code, looking at its heartbeat every beat meanwhile: one that
    stalled is ended (with its preparing children) and raises :class:`WorkerStalled`."""
    try:
        ended = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later: unwatched, as Beam waits
        return wait()
    try:
        while not select.select([ended], [], [], heartbeat.BEAT_S)[0]:
            if why := watch.stalled(pid, _STALL_S[0]):
                _STALLED.append(WorkerStalled(f"a worker process {why}; it was ended and the crawl stopped "
                                              f"(bound: --worker_stall_timeout={_STALL_S[0]:g})"))
                _end([pid])
                wait()
                raise _STALLED[-1]
        return wait()
    finally:
        os.close(ended)
