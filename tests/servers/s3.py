"""A server speaking S3 on a free port of 127.0.0.1: moto's standalone server (``moto[server]`` from PyPI,
pinned in the test extra), run as its own process. Clients reach it as they reach AWS, through
``AWS_ENDPOINT_URL``, so a test that names ``s3://`` addresses this machine and no cloud.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers.jvm import free_ports, stop, wait_port


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    log: Path  # the server's log: one line per request it answered

    def storage_options(self) -> dict[str, str]:
        """What delta-rs (the table) needs to reach this server: its endpoint over plain HTTP, a region
        and a login (moto accepts any)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "beamtrawl", "AWS_SECRET_ACCESS_KEY": "beamtrawl-secret"}


@contextlib.contextmanager
def running_s3(folder: Path) -> Iterator[S3Server]:
    """The server, its log in ``folder``; stopped on leaving."""
    (port,) = free_ports(1)
    log = folder / "moto-s3.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, process, log, timeout=60)
        yield S3Server(f"http://127.0.0.1:{port}", log)
    finally:
        stop(process)
