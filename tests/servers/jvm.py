"""What the Beam job servers of the tests share: a classpath fetched once from Maven Central by a POM
(tests/servers/engines/), Java, free loopback ports, and processes started in their own process group
and stopped with it."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.servers import refuse_fetch_in_tests

ENGINES = Path(__file__).resolve().parent / "engines"
CACHE = Path.home() / ".cache" / "beamtrawl"
MARKER = ".beamtrawl-installed"


def ensure_classpath(pom: str, name: str) -> Path:
    """The folder of jars ``pom`` (a file in tests/servers/engines/) resolves to, fetched once with Maven
    and cached under ~/.cache/beamtrawl/NAME; a half-done fetch is redone."""
    lib = CACHE / name / "lib"
    if (CACHE / name / MARKER).is_file():
        return lib
    refuse_fetch_in_tests(name, f"python tests/servers/{name.split('-')[0]}.py install")
    mvn = shutil.which("mvn")
    if not mvn:
        raise RuntimeError("Maven (mvn) is needed to fetch the job server: apt-get install maven")
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=CACHE))
    try:
        shutil.copy2(ENGINES / pom, staging / "pom.xml")
        done = subprocess.run([mvn, "-B", "-q", "-f", str(staging / "pom.xml"), "dependency:copy-dependencies",
                               f"-DoutputDirectory={staging / 'lib'}"], check=False, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"mvn failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        (staging / MARKER).write_text(pom + "\n")
        shutil.rmtree(CACHE / name, ignore_errors=True)
        staging.rename(CACHE / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return lib


def java() -> str:
    """Java 17 (Flink 1.19 and Spark 3.5 run on it; the Temurin 25 beside it is too new for Spark)."""
    for candidate in (os.environ.get("JAVA_HOME"), "/usr/lib/jvm/java-17-openjdk-amd64"):
        if candidate and os.access(f"{candidate}/bin/java", os.X_OK):
            return f"{candidate}/bin/java"
    return shutil.which("java") or "java"


def free_ports(count: int) -> list[int]:
    """Ports free now, chosen below the kernel's ephemeral range: a port ``bind(0)`` hands out is also one the
    kernel gives the next outgoing connection of a parallel test, which then took it before the server bound it
    (CI: "Failed to bind to address 0.0.0.0:37965")."""
    lowest = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randrange(10_000, max(lowest, 10_001))
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in chosen:
            chosen.append(port)
    return chosen


def start(command: list[str], log: Path, env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
    """A server process in a process group of its own, its output in ``log``, run in a working folder of
    its own (``cwd``, else ``<log>.run/`` beside the log) with an empty Flink plugin folder there: Flink
    takes ``./plugins`` for its plugin folder, and started in a checkout it met the project's own
    ``plugins/`` package and failed ("Cannot find any jar files for plugin in directory
    [plugins/__pycache__]")."""
    folder = cwd or log.with_name(f"{log.name}.run")
    (folder / "flink-plugins").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FLINK_PLUGINS_DIR": str(folder / "flink-plugins"), **(env or {})}
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env, cwd=folder)


def wait_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.3)
    stop(process)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
    raise RuntimeError(f"{log.stem} did not listen on port {port} (exit {process.poll()}):\n{tail}")


def stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """End the process and everything it started (its group): TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def command_line(doc: str, install, start_cluster, name: str, argv: list[str] | None = None) -> int:
    """``python tests/servers/<engine>.py install|run [--workdir DIR]``: fetch the classpath, or start the
    cluster, print the options to crawl with, and run until Ctrl-C or SIGTERM."""
    import argparse
    import tempfile
    import time

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("command", choices=["install", "run"])
    parser.add_argument("--workdir", help="where the cluster keeps its files and logs")
    args = parser.parse_args(argv)
    if args.command == "install":
        print(install())
        return 0
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix=f"beamtrawl-{name.split()[0].lower()}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    with start_cluster(workdir) as cluster:
        print(f"{name} up (logs in {workdir}); crawl with an OpenSearch index:\n"
              f"  beamtrawl crawl CONFIG {' '.join(cluster.options)}\nCtrl-C stops it.", flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops the cluster as Ctrl-C does
        with contextlib.suppress(KeyboardInterrupt):
            while all(p.poll() is None for p in cluster.processes.values()):
                time.sleep(1)
    return 0
