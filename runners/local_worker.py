"""A worker process of the local runner: Beam's SDK harness, ended without Python's shutdown.

That shutdown waits about half a second for the harness's idle gRPC threads, and Beam stops its workers
one after another, so every crawl paid it once per worker. What the shutdown did for beamtrawl, ending
the worker's preparing children, is done here. A harness that fails still raises, and the process exits
non-zero as Beam's own worker would.

It ignores SIGINT (from birth: runners/direct.py; here again, should another command start it), and so do
the preparing processes it starts, which inherit that: Ctrl-C reaches a terminal's whole process group, and
the command's driver ends the crawl's processes itself (pipeline/interrupt.py) — a worker left to Python
would print a ``KeyboardInterrupt`` traceback of its own first. A worker forked from the command
(runners/forked_workers.py) runs :func:`serve` too."""

from __future__ import annotations

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # first of all: Beam takes a second to import

import os
import sys

from beamtrawl.runners.beam_import import import_beam

import_beam()
from apache_beam.runners.worker import sdk_worker_main
from beamtrawl.runners.direct import smaller_data_buffers
from beamtrawl.runners.heartbeat import beat_from_environment
from beamtrawl.transforms.preparators.isolation import end_children


def serve() -> None:
    """Run the harness Beam's environment variables describe (beating: runners/heartbeat.py), end the
    preparing children, and exit."""
    beat_from_environment()
    smaller_data_buffers()
    sdk_worker_main.main(sys.argv)
    end_children()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    serve()
