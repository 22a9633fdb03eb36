"""DirectRunner, the default: Beam's FnApiRunner with one worker process per core.

Beam's own DirectRunner first tries to download the Prism runner, which fails (or hangs) without
internet; FnApiRunner is named explicitly so that never happens. Its worker processes run
``beamtrawl.runners.local_worker`` (see there why) with ``-P``: ``python -m`` would otherwise put the current folder
first on the import path, and a ``concurrent.py`` lying there would run inside every worker. They ignore
SIGINT from birth: Ctrl-C is the driver's to handle (pipeline/interrupt.py).

Its workers are forked from the command while it starts, where it could (runners/forked_workers.py). A Flatten
of a Flatten is one Flatten before the graph is cut into stages (runners/flattens.py).

A worker process that dies is heard (:func:`_failing_on_worker_death`): Beam only logs it from the thread
that started the process, and the runner then waits forever for the dead worker's answers. So is one that stops
answering or moving on (runners/heartbeat.py): it is ended, and the crawl stops as if it had died.

The runner's data streams are guarded (:func:`guard_data_streams`): unguarded, Beam 2.73 loses chunks of a
stage's input without an error (issue 33; docs/upstream-beam-lost-chunks.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import threading

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from beamtrawl.runners import flattens, forked_workers, heartbeat
from beamtrawl.runners.dofn_specs import remember_dofn_specs
from beamtrawl.runners.options import with_defaults

#: Beam starts it with a shell. ``trap '' INT``: the worker is born ignoring SIGINT (so Python installs no
#: KeyboardInterrupt for it, and its preparing children inherit that): a terminal's Ctrl-C reaches the whole
#: process group, and the command's driver ends its workers itself (pipeline/interrupt.py). They stay in the
#: command's process group, so killing that group still ends the whole crawl.
WORKER_COMMAND = f"trap '' INT; exec {shlex.quote(sys.executable)} -P -m beamtrawl.runners.local_worker"

log = logging.getLogger(__name__)


class WorkerDied(Exception):
    """A worker process of the local runner ended in the middle of the crawl."""


def arguments(beam_args: list[str]) -> list[str]:
    return with_defaults(beam_args, runner="FnApiRunner", direct_running_mode="multi_processing",
                         direct_num_workers=str(os.cpu_count() or 1))


def runner(options: PipelineOptions):
    """The runner for ``beam.Pipeline(runner=…)``: for FnApiRunner in multi-processing mode, one whose workers
    run ``WORKER_COMMAND``; otherwise None, and Beam makes the runner the options name."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    direct = options.view_as(DirectOptions)
    if (options.view_as(StandardOptions).runner != "FnApiRunner"
            or direct.direct_running_mode != "multi_processing"):
        return None
    # In multi-processing mode FnApiRunner puts its own worker command back; in the "in_memory" mode it keeps
    # the environment given here, whose workers are processes all the same (direct_num_workers of them).
    direct.direct_running_mode = "in_memory"
    guard_data_streams()
    smaller_data_buffers()
    one_worker_for_one_part()
    remember_dofn_specs()
    forked_workers.install(WORKER_COMMAND, heartbeat.bound(options))

    class LocalRunner(FnApiRunner):
        def create_stages(self, pipeline_proto):
            return super().create_stages(flattens.merged(pipeline_proto))

        def run_pipeline(self, pipeline, options):
            try:
                with _failing_on_worker_death():
                    return super().run_pipeline(pipeline, options)
            finally:
                forked_workers.release()  # those the run did not take

    return LocalRunner(default_environment=SubprocessSDKEnvironment.from_command_string(WORKER_COMMAND),
                       provision_info=_provision(options))


def _provision(options: PipelineOptions):
    """What each worker is told when it starts: the pipeline's options of text (endpoints, regions, logins), as a
    portable runner tells its workers. FnApiRunner tells them none, so a worker's file systems knew no option of
    the command line (a work folder in Azure reached by Azure AD needs ``--blob_service_endpoint``: "Account URL
    must be a string"). Numbers are left out: the struct carries them as floats, which an int option refuses."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.job.utils import dict_to_struct
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo

    given = {f"beam:option:{name}:v1": value for name, value in options.get_all_options(drop_default=True).items()
             if isinstance(value, str)}
    return ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(retrieval_token="unused-retrieval-token",
                                                                      pipeline_options=dict_to_struct(given)))


def guard_data_streams() -> None:
    """Make a write to Beam's time-flushed data stream wait for a flush in progress.

    FnApiRunner sends each bundle's input to a worker through ``TimeBasedBufferingClosableOutputStream``
    (``DATA_BUFFER_TIME_LIMIT_MS``: a flusher thread every second). Its flush copies the buffer, hands the copy
    on and then clears the buffer; the thread sending the input writes without a lock, so whatever it writes
    in between is cleared unsent, and the worker sees a shorter input with no error. Under load that lost
    hundreds of thousands of a million files' entries on their way into the freshness join. A write here takes
    the lock the flush holds. Idempotent; Beam is pinned (2.73.0) because this reaches into its internals."""
    from apache_beam.runners.worker import data_plane

    stream = data_plane.TimeBasedBufferingClosableOutputStream
    if getattr(stream, "_beamtrawl_guarded", False):
        return
    unguarded = stream.write

    def write(self, b, nested=False):
        with self._flush_lock:
            unguarded(self, b, nested)

    stream.write, stream._beamtrawl_guarded = write, True


#: Bytes of a bundle's output a data stream holds before it sends them (Beam's default: 10 MB).
DATA_BUFFER_BYTES = 256 << 10


def smaller_data_buffers() -> None:
    """Send a bundle's output once 256 KiB of it is buffered, not 10 MB (issue 27, target 4).

    Discovery writes several outputs at once (entries, events, listings, the next round's frontier); on a large
    tree each filled its 10 MB buffer and its copy on the way out, in the worker and in the command that
    receives them: from 20,000 to 200,000 files a full crawl's memory grew by 20 %, at 256 KiB by 7 %, in the
    same time (docs/scaling.md). The threshold is a default argument, so it is set on both stream classes as well
    as on the module, whose value also bounds how much the sender coalesces into one message. Called in the command
    and in every worker."""
    from apache_beam.runners.worker import data_plane

    beam_default = 10 << 20
    data_plane._DEFAULT_SIZE_FLUSH_THRESHOLD = DATA_BUFFER_BYTES
    for stream in (data_plane.SizeBasedBufferingClosableOutputStream,
                   data_plane.TimeBasedBufferingClosableOutputStream):
        stream.__init__.__defaults__ = tuple(DATA_BUFFER_BYTES if value == beam_default else value
                                             for value in stream.__init__.__defaults__)


def one_worker_for_one_part() -> None:
    """Run a stage's bundle on one worker when only one of its parts would hold any input.

    With several workers FnApiRunner cuts each stage's input into one part per worker and runs every part, empty
    or not: a stage of one element (a start URL, a singleton of totals, a one-file crawl's every stage) ran an
    empty bundle on each other worker, which built that stage's DoFns there for nothing. Such a stage now runs
    as Beam runs it with one worker (or a stateful stage): the whole input in one bundle; any correct DoFn
    takes any cut of its input into bundles. Idempotent; Beam is pinned (2.73.0): this replaces its class."""
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    parallel = fn_runner.ParallelBundleManager
    if getattr(parallel, "_beamtrawl_one_part", False):
        return

    class OnePartOnOneWorker(parallel):
        _beamtrawl_one_part = True

        def process_bundle(self, inputs, expected_outputs, fired_timers, expected_output_timers, dry_run=False):
            if _parts_with_input(inputs, fired_timers, self._num_workers) > 1:
                return super().process_bundle(inputs, expected_outputs, fired_timers, expected_output_timers, dry_run)
            whole = fn_runner.BundleManager(self.bundle_context_manager, self._progress_frequency,
                                            cache_token_generator=self._cache_token_generator)
            return whole.process_bundle(inputs, expected_outputs, fired_timers, expected_output_timers, dry_run)

    fn_runner.ParallelBundleManager = OnePartOnOneWorker


def _parts_with_input(inputs, fired_timers, workers: int) -> int:
    """How many of the ``workers`` parts FnApiRunner would cut a bundle's input into hold any (timers go to the
    first)."""
    busy = {0} if fired_timers else set()
    for buffer in inputs.values():
        busy.update(k for k, part in enumerate(buffer.partition(workers)) if any(part))
    return len(busy)


def _died(heard: RuntimeError) -> WorkerDied:
    """What the crawl says of the worker whose end was ``heard`` (Beam's "… exited with return code N", or
    :class:`forked_workers.WorkerEnded`)."""
    if isinstance(heard, forked_workers.WorkerEnded):
        return WorkerDied(str(heard))
    code = str(heard).rsplit(" ", 1)[-1]
    try:
        how = f"exit code {code}: killed by {signal.Signals(-int(code)).name}" if code.startswith("-") else \
            f"exit code {code}"
    except ValueError:  # not a signal Python names, or not Beam's message
        how = f"exit code {code}"
    return WorkerDied(f"a worker process ended unexpectedly ({how}); the crawl stopped")


@contextlib.contextmanager
def _failing_on_worker_death():
    """While the pipeline runs, a worker process that exits with an error (killed, crashed, ``os._exit``)
    raises :class:`WorkerDied` in the main thread, which is waiting inside the runner. Beam starts each
    worker from a thread named ``run_worker`` that raises ``RuntimeError`` when its process fails; that
    exception reaches ``threading.excepthook``, and a signal carries it to the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: an embedding program keeps Beam's behaviour
        return
    import grpc

    heard: list[RuntimeError] = []
    previous_hook, main = threading.excepthook, threading.main_thread().ident

    def hook(args):
        if args.thread is not None and args.thread.name == "run_worker" and isinstance(args.exc_value, RuntimeError):
            heard.append(args.exc_value)
            signal.pthread_kill(main, signal.SIGUSR1)
            return
        if heard or isinstance(args.exc_value, grpc.RpcError):  # Beam's threads that served a worker whose
            # gRPC stream broke, as it died (heard just after) or was ended: the crawl's one line says what
            # happened; their tracebacks only with --debug
            log.debug("after a worker died, thread %s failed", args.thread and args.thread.name,
                      exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
            return
        previous_hook(args)

    told: list[bool] = []

    def interrupt(_signum, _frame):
        # Once: the runner's own clean-up is not interrupted again by the next worker. Counted apart from
        # ``heard``: two workers dying at once may both be heard before the first signal is handled.
        if heard and not told:
            told.append(True)
            forked_workers.end_workers()  # the others: Beam's clean-up would wait for them
            raise _died(heard[0])

    previous_handler = signal.signal(signal.SIGUSR1, interrupt)
    threading.excepthook = hook
    try:
        try:
            yield
        except Exception as err:  # the runner heard the stalled worker's end first: its data stream closed
            if (stall := forked_workers.stalled()) and not isinstance(err, WorkerDied):
                if not told:
                    told.append(True)
                    forked_workers.end_workers()
                raise _died(stall) from err
            raise
        if heard:  # during Beam's clean-up, which logs what its workers' ends raise and goes on
            raise _died(heard[0])
    finally:
        if not heard:  # else Beam's threads may still fail as they notice: kept quiet
            threading.excepthook = previous_hook
        signal.signal(signal.SIGUSR1, previous_handler)
