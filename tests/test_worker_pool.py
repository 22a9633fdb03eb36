"""The worker pool of clusters (runners/worker_pool.py), as a user starts it by hand: from another folder, with
the project's virtualenv's Python not activated and a ``python`` first on PATH that has no apache_beam.
Beam's own pool then starts workers that die at once; beamtrawl's starts them with its own interpreter, and
the driver's check tells the two apart within its bound. (A crawl on a real cluster with such a pool:
tests/test_clusters.py.)"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from beamtrawl.runners.worker_pool import pool_address, unstartable

from tests.servers.jvm import free_ports, start, stop, wait_port

BEAM_POOL = "apache_beam.runners.worker.worker_pool_main"
OWN_POOL = "beamtrawl.runners.worker_pool"


@pytest.fixture(scope="module")
def python_without_beam(tmp_path_factory) -> Path:
    """A folder whose ``python`` is the system's Python, without apache_beam."""
    folder = tmp_path_factory.mktemp("bin")
    system = next(p for p in ("/usr/bin/python3", "/bin/python3") if os.access(p, os.X_OK))
    assert subprocess.run([system, "-c", "import apache_beam"], capture_output=True, check=False).returncode != 0
    (folder / "python").symlink_to(system)
    return folder


@contextlib.contextmanager
def pool(module: str, tmp_path: Path, path_first: Path):
    """The pool ``module`` started from another folder, ``path_first`` first on its PATH; its address."""
    environment = {"PATH": f"{path_first}{os.pathsep}{os.environ['PATH']}"}
    for attempt in range(3):  # a free port another test's server took before the pool bound it: another port
        (port,) = free_ports(1)
        process = start([sys.executable, "-P", "-m", module, f"--service_port={port}"], tmp_path / f"{module}.log",
                        environment, cwd=tmp_path)
        try:
            wait_port(port, process, tmp_path / f"{module}.log")
            break
        except RuntimeError as err:
            if "Address already in use" not in str(err) or attempt == 2:
                raise
    try:
        yield f"localhost:{port}"
    finally:
        stop(process)


def test_beams_pool_starts_the_python_on_path_and_the_check_says_so_within_its_bound(tmp_path, python_without_beam):
    with pool(BEAM_POOL, tmp_path, python_without_beam) as address:
        started = time.monotonic()
        why = unstartable(address, "localhost", 10)
        assert time.monotonic() - started < 20
    assert why.startswith("started a Python worker that did not connect within 10 s"), why
    assert "No module named 'apache_beam'" in (tmp_path / f"{BEAM_POOL}.log").read_text()


def test_beamtrawls_pool_starts_its_own_python(tmp_path, python_without_beam):
    with pool(OWN_POOL, tmp_path, python_without_beam) as address:
        assert unstartable(address, "localhost", 60) == ""
    log = (tmp_path / f"{OWN_POOL}.log").read_text()
    assert f"workers run {sys.executable} -P" in log and "ModuleNotFoundError" not in log


def test_which_crawls_hand_their_work_to_a_pool():
    assert pool_address("PortableRunner", ["--environment_type=EXTERNAL", "--environment_config=h:1"]) == "h:1"
    assert pool_address("flink", ["--flink_master=jm:8081", "--environment_config=h:1"]) == "h:1"
    assert pool_address("spark", ["--spark_master_url=spark://m:7077", "--environment_config", "h:2"]) == "h:2"
    assert pool_address("flink", ["--environment_config=h:1"]) is None  # [local]: LOOPBACK
    assert pool_address("PortableRunner", ["--environment_type=LOOPBACK"]) is None
    assert pool_address(None, []) is None


def test_a_pool_on_a_port_in_use_says_so_in_one_line(tmp_path):
    (port,) = free_ports(1)
    with socket.create_server(("", port)):
        done = subprocess.run([sys.executable, "-P", "-m", OWN_POOL, f"--service_port={port}"], capture_output=True,
                              text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"beamtrawl worker pool: cannot listen on port {port} (in use, or not this user's to use); "
        f"choose another --service_port")


@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_a_pool_on_no_port_is_refused_not_started_on_any_free_one(port):
    done = subprocess.run([sys.executable, "-P", "-m", OWN_POOL, f"--service_port={port}"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and f"argument --service_port: '{port}' is not a port (1 to 65535)" in done.stderr
