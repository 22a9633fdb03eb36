"""Apache Flink for the tests, from Maven artifacts only: Beam's Flink job server is the runner module
plus its dependencies on a classpath (tests/servers/engines/flink-1.19-jobserver.pom.xml, fetched once).

* ``mini_cluster(workdir)``: the job server over an embedded Flink MiniCluster (one JVM); Python workers
  run LOOPBACK in the crawling process.
* ``session_cluster(workdir)``: a real session cluster — JobManager, TaskManager, the job server, and a
  pool of Python workers (``--environment_type=EXTERNAL``) — each a process group of its own.
* ``job_server_jar()``: a 2 KB jar whose manifest names the classpath, for ``beamtrawl crawl --runner flink
  --flink_job_server_jar=…`` (Beam then starts and must stop the job server itself).

Each yields a :class:`Flink` with the Beam options to crawl with, and stops every process on exit.

    python tests/servers/flink.py install
    python tests/servers/flink.py run [--workdir DIR]     # a session cluster; prints the crawl options
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.conftest import DROP_DAC
from tests.servers.jvm import (
    ENGINES,
    command_line,
    ensure_classpath,
    free_ports,
    java,
    start,
    stop,
    wait_port,
)

NAME = "flink-1.19-jobserver"


def install() -> Path:
    return ensure_classpath(f"{NAME}.pom.xml", NAME)


@dataclass
class Flink:
    """A running engine (Flink here, Spark in spark.py): its processes and the options to crawl with."""

    workdir: Path
    options: list[str]  # Beam options for `beamtrawl crawl` (after the config)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    restarts: dict[str, list[str]] = field(default_factory=dict)  # how to start a process again
    environment: dict[str, str] = field(default_factory=dict)  # of every process

    def kill(self, name: str) -> None:
        """SIGKILL one process (its group), as a crash would."""
        stop(self.processes[name], grace=0)

    def restart(self, name: str) -> None:
        self.processes[name] = start(self.restarts[name], self.workdir / f"{name}.log", self.environment)

    def stop_all(self) -> None:
        for process in reversed(list(self.processes.values())):
            stop(process)


def _job_server(lib: Path, master: str, workdir: Path) -> tuple[list[str], int]:
    job_port, artifact_port = free_ports(2)
    return [java(), "-Xmx600m", "-cp", f"{lib}/*", "org.apache.beam.runners.flink.FlinkJobServerDriver",
            f"--flink-master={master}", f"--job-port={job_port}", f"--artifact-port={artifact_port}",
            "--expansion-port=-1", f"--artifacts-dir={workdir / 'artifacts'}"], job_port


@contextlib.contextmanager
def mini_cluster(workdir: Path) -> Iterator[Flink]:
    lib = install()
    command, job_port = _job_server(lib, "[local]", workdir)
    flink = Flink(workdir, ["--runner=PortableRunner", f"--job_endpoint=localhost:{job_port}",
                            "--environment_type=LOOPBACK"])
    try:
        flink.processes["jobserver"] = start(command, workdir / "jobserver.log")
        wait_port(job_port, flink.processes["jobserver"], workdir / "jobserver.log")
        yield flink
    finally:
        flink.stop_all()


def _config(workdir: Path) -> Path:
    rpc, rest, blob, tm_rpc = free_ports(4)
    text = (ENGINES / "flink-session-cluster.conf.yaml").read_text()
    for key, value in (("jobmanager.rpc.port", rpc), ("rest.port", rest), ("blob.server.port", blob),
                       ("taskmanager.rpc.port", tm_rpc), ("io.tmp.dirs", workdir / "tmp")):
        text = re.sub(rf"^{re.escape(key)}: .*$", f"{key}: {value}", text, flags=re.MULTILINE)
    conf = workdir / "conf"
    conf.mkdir(exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    (conf / "config.yaml").write_text(text)
    return conf


def _taskmanager(lib: Path, conf: Path) -> list[str]:
    """What Flink's taskmanager.sh runs: the JVM flags and -D values BashJavaUtils derives from the
    configuration (without them: "taskmanager.cpu.cores is not set")."""
    done = subprocess.run([java(), "-cp", f"{lib}/*", "org.apache.flink.runtime.util.bash.BashJavaUtils",
                           "GET_TM_RESOURCE_PARAMS", "--configDir", str(conf)],
                          check=True, capture_output=True, text=True)
    marker = "BASH_JAVA_UTILS_EXEC_RESULT:"
    jvm_flags, dynamic = (ln[len(marker):].split() for ln in done.stdout.splitlines() if ln.startswith(marker))
    return [java(), *jvm_flags, "-cp", f"{lib}/*", "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            "--configDir", str(conf), *dynamic]


def _rest_port(conf: Path) -> int:
    return int(re.search(r"^rest\.port: (\d+)$", (conf / "config.yaml").read_text(), re.MULTILINE).group(1))


def _wait_taskmanager(rest: int, process: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    import json
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError, ValueError), \
                urllib.request.urlopen(f"http://localhost:{rest}/taskmanagers", timeout=2) as response:
            if json.load(response).get("taskmanagers"):
                return
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
    raise RuntimeError(f"no TaskManager registered with the JobManager:\n{tail}")


@contextlib.contextmanager
def session_cluster(workdir: Path) -> Iterator[Flink]:
    lib = install()
    conf = _config(workdir)
    rest = _rest_port(conf)
    (pool_port,) = free_ports(1)
    job_command, job_port = _job_server(lib, f"localhost:{rest}", workdir)
    flink = Flink(workdir, ["--runner=PortableRunner", f"--job_endpoint=localhost:{job_port}",
                            "--environment_type=EXTERNAL", f"--environment_config=localhost:{pool_port}",
                            "--parallelism=2"])
    flink.restarts = {
        "jobmanager": [java(), "-Xmx512m", "-cp", f"{lib}/*",
                       "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "--configDir",
                       str(conf)],
        "taskmanager": _taskmanager(lib, conf),
        "jobserver": job_command,
        "workers": worker_pool(pool_port),
    }
    try:
        for name in flink.restarts:
            flink.restart(name)
        wait_port(rest, flink.processes["jobmanager"], workdir / "jobmanager.log")
        _wait_taskmanager(rest, flink.processes["taskmanager"], workdir / "taskmanager.log")
        wait_port(job_port, flink.processes["jobserver"], workdir / "jobserver.log")
        wait_port(pool_port, flink.processes["workers"], workdir / "workers.log")
        yield flink
    finally:
        flink.stop_all()


def worker_pool(port: int) -> list[str]:
    """Python workers for EXTERNAL environments: beamtrawl's pool (runners/worker_pool.py), which starts each
    worker with the crawl's own interpreter (never the ``python`` on PATH) and never imports the current
    folder's modules (-P); as root, without the capabilities that bypass file permissions, as the tests'
    crawls (tests/conftest.py), so unreadable files are unreadable to them too."""
    command = [sys.executable, "-P", "-m", "beamtrawl.runners.worker_pool", f"--service_port={port}"]
    return DROP_DAC + command if os.geteuid() == 0 else command


def job_server_jar(folder: Path | None = None) -> Path:
    """A jar holding only a manifest (Main-Class and Class-Path of every job-server jar), for Beam's
    ``--flink_job_server_jar``, which takes one jar."""
    lib = install()
    jar = (folder or lib.parent) / "beamtrawl-flink-job-server.jar"
    if jar.exists():
        return jar
    class_path = " ".join(p.as_uri() for p in sorted(lib.glob("*.jar")))
    text = f"Manifest-Version: 1.0\nMain-Class: org.apache.beam.runners.flink.FlinkJobServerDriver\n" \
           f"Class-Path: {class_path}\n"
    lines = []
    for line in text.splitlines():  # manifest lines are at most 72 bytes; continuations start with a space
        encoded = line.encode()
        lines.append(encoded[:72])
        lines += [b" " + encoded[i:i + 71] for i in range(72, len(encoded), 71)]
    with tempfile.NamedTemporaryFile(dir=jar.parent, delete=False, suffix=".partial") as handle, \
            zipfile.ZipFile(handle, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", b"\r\n".join(lines) + b"\r\n\r\n")
    Path(handle.name).rename(jar)
    return jar


def main(argv: list[str] | None = None) -> int:
    return command_line(__doc__, install, session_cluster, "Flink session cluster", argv)

if __name__ == "__main__":
    sys.exit(main())
