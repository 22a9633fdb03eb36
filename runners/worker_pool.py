"""The pool of Python workers a Flink or Spark cluster runs beamtrawl's stages in
(``--environment_type=EXTERNAL --environment_config=HOST:PORT``), and the driver's check that it starts one.

Start one beside every TaskManager or Spark worker, with the Python beamtrawl is installed in::

    /path/to/venv/bin/python -m beamtrawl.runners.worker_pool --service_port=50000

Beam's own pool (``apache_beam.runners.worker.worker_pool_main``) starts each SDK harness as ``python -c …``:
whichever ``python`` comes first on PATH, not the pool's own. Started by hand with a virtualenv's Python
that was not activated, the harnesses ran a Python without apache_beam and died at once
(``ModuleNotFoundError`` in the pool's log), and the job waited for them for ever. Its harnesses also ran
without ``-P``, so they imported modules from their current folder. This pool starts each harness with its
own interpreter and ``-P``, and lets the harness write to the pool's log (Beam's pool gave it a pipe that
nobody reads, which stops a harness once it fills).

Before a crawl is handed to the cluster, :func:`check_workers` asks the pool the crawl names to start one
harness that connects back to the driver: a pool that cannot (Beam's pool with the wrong ``python``, an
interpreter without apache_beam) ends the crawl with one line, exit 2, within ``WORKER_START_TIMEOUT_S``.
A pool the driver cannot reach (``localhost:50000`` means each TaskManager's own machine) is not checked.
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent import futures

from beamtrawl.runners.options import RunnerError, option

#: Seconds a worker the pool starts has to connect to the driver before the crawl gives up, before any work.
WORKER_START_TIMEOUT_S = 60.0
#: Seconds to wait for the pool's own port.
POOL_CONNECT_TIMEOUT_S = 5.0

log = logging.getLogger("beamtrawl")


def harness_command(control: str, worker_id: str, state_cache_size: int, data_buffer_time_limit_ms: int,
                    provision: str = "") -> list[str]:
    """The SDK harness as Beam's pool starts it, but with this interpreter, never the current folder's modules,
    and with the job's options for Beam's file systems (:func:`job_options_for_file_systems`)."""
    code = (f"from beamtrawl.runners.worker_pool import job_options_for_file_systems; "
            f"job_options_for_file_systems({provision!r}, {worker_id!r}); "
            f"from apache_beam.runners.worker.sdk_worker import SdkHarness; SdkHarness({control!r}, "
            f"worker_id={worker_id!r}, state_cache_size={state_cache_size}, "
            f"data_buffer_time_limit_ms={data_buffer_time_limit_ms}).run()")
    return [sys.executable, "-P", "-c", code]


def job_options_for_file_systems(provision: str, worker_id: str) -> None:
    """Give Beam's file systems the job's options, read from the runner's provision service, as Beam's own
    container entry point (sdk_worker_main) does and its pools do not: without them a work folder in a bucket
    fails on every worker (Beam's S3: "Must provide one of client or options"), and ``--s3_endpoint_url`` and
    the like never reach the workers. Nothing to ask: Beam's defaults (each store's own login chain)."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    options: dict = {}
    if provision:
        import grpc
        from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc
        from apache_beam.runners.worker.sdk_worker_main import _load_pipeline_options
        from google.protobuf import json_format

        try:
            with grpc.insecure_channel(provision) as channel:
                info = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel).GetProvisionInfo(
                    beam_provision_api_pb2.GetProvisionInfoRequest(), metadata=[("worker_id", worker_id)],
                    timeout=60).info
            options = _load_pipeline_options(json_format.MessageToJson(info.pipeline_options))
        except grpc.RpcError as err:  # a runner without the service: the stores' own chains, as before
            log.warning("the job's options could not be read from %s (%s)", provision, err.code())
    FileSystems.set_options(PipelineOptions.from_dictionary(options))


def _servicer():
    from apache_beam.portability.api import beam_fn_api_pb2
    from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer

    class OwnInterpreterPool(BeamFnExternalWorkerPoolServicer):
        """Beam's pool, each harness started by :func:`harness_command`."""

        def StartWorker(self, request, context):
            if not self._use_process or self._container_executable:
                return super().StartWorker(request, context)
            try:
                command = harness_command(request.control_endpoint.url, request.worker_id, self._state_cache_size,
                                          self._data_buffer_time_limit_ms, request.provision_endpoint.url)
                self._worker_processes[request.worker_id] = subprocess.Popen(command, close_fds=True)
            except OSError as err:
                return beam_fn_api_pb2.StartWorkerResponse(error=f"{sys.executable}: {err}")
            return beam_fn_api_pb2.StartWorkerResponse()

    return OwnInterpreterPool


def _port(text: str) -> int:
    """A port the cluster's runner can name: gRPC took 99999 (and 0) for "any free port", and listened there."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (1 to 65535)")
    return int(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service_port", type=_port, required=True, help="the port the cluster's runner calls")
    args, _ = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        address, server = _servicer().start(use_process=True, port=args.service_port)
    except RuntimeError:  # gRPC's "Failed to bind", after its own log line
        print(f"beamtrawl worker pool: cannot listen on port {args.service_port} (in use, or not this user's to "
              f"use); choose another --service_port", file=sys.stderr)
        raise SystemExit(2) from None
    log.info("beamtrawl worker pool at %s: workers run %s -P", address, sys.executable)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop(0)


# -- the driver's check --------------------------------------------------------------------------

def pool_address(runner: str | None, args: list[str]) -> str | None:
    """HOST:PORT of the worker pool a crawl on ``runner`` with Beam ``args`` hands its work to, or None (workers
    LOOPBACK in this process, Docker, Dataflow)."""
    environment = option(args, "environment_type")
    if environment is None:  # what runners/flink.py and spark.py default to on a cluster
        key = (runner or "").lower().removesuffix("runner")
        master = option([a.replace("--flink-master", "--flink_master", 1) for a in args], "flink_master") or ""
        spark = option(args, "spark_master_url") or ""
        if (key == "flink" and master not in ("", "[local]")) or (key == "spark" and spark.startswith("spark://")):
            environment = "EXTERNAL"
    return option(args, "environment_config") if (environment or "").upper() == "EXTERNAL" else None


def check_workers(runner: str | None, args: list[str], timeout: float = WORKER_START_TIMEOUT_S) -> None:
    """Raise :class:`RunnerError` when the crawl's worker pool cannot start a Python worker that connects back
    to this machine within ``timeout``: the cluster would wait for it for ever."""
    address = pool_address(runner, args)
    if not address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host or "localhost", int(port)), timeout=POOL_CONNECT_TIMEOUT_S).close()
    except (OSError, ValueError):
        log.debug("the worker pool at %s is not reachable from here; not checked", address)
        return
    if why := unstartable(address, host, timeout):
        raise RunnerError(f"the worker pool at {address} {why}; nothing was crawled")


def unstartable(address: str, host: str, timeout: float) -> str:
    """Why the pool at ``address`` started no worker that connected within ``timeout``, or "". The worker is
    given a control endpoint served here, which ends its session as soon as it connects."""
    import grpc
    from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc, endpoints_pb2

    connected = threading.Event()

    class Control(beam_fn_api_pb2_grpc.BeamFnControlServicer):
        def Control(self, requests, context):
            connected.set()
            return iter(())

    server = grpc.server(futures.ThreadPoolExecutor(2))
    beam_fn_api_pb2_grpc.add_BeamFnControlServicer_to_server(Control(), server)
    port = server.add_insecure_port("[::]:0")
    server.start()
    here = "localhost" if host in ("", "localhost", "127.0.0.1", "::1") else socket.getfqdn()
    worker_id = f"beamtrawl-check-{uuid.uuid4().hex[:8]}"
    channel = grpc.insecure_channel(address)
    pool = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel)
    try:
        answer = pool.StartWorker(beam_fn_api_pb2.StartWorkerRequest(
            worker_id=worker_id, control_endpoint=endpoints_pb2.ApiServiceDescriptor(url=f"{here}:{port}")),
            timeout=timeout)
        if answer.error:
            return f"could not start a Python worker ({answer.error.strip().splitlines()[-1]})"
        if not connected.wait(timeout):
            return (f"started a Python worker that did not connect within {timeout:.0f} s (its Python may lack "
                    f"apache_beam or beamtrawl: see the pool's log; start the pool with "
                    f"'python -m beamtrawl.runners.worker_pool')")
        return ""
    except grpc.RpcError as err:
        return f"did not answer ({err.code().name})"
    finally:
        try:
            pool.StopWorker(beam_fn_api_pb2.StopWorkerRequest(worker_id=worker_id), timeout=POOL_CONNECT_TIMEOUT_S)
        except grpc.RpcError:
            pass
        channel.close()
        server.stop(0)


if __name__ == "__main__":
    main()
