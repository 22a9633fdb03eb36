"""Apache Spark for the tests, from Maven artifacts only: a standalone master and worker and Beam's Spark
job server, all from the classpath tests/servers/engines/spark-3.5-jobserver.pom.xml resolves to (fetched
once), plus a pool of Python workers (``--environment_type=EXTERNAL``); each a process group of its own.

    python tests/servers/spark.py install
    python tests/servers/spark.py run [--workdir DIR]     # prints the crawl options
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.servers.flink import Flink as Cluster
from tests.servers.flink import worker_pool
from tests.servers.jvm import ENGINES, command_line, ensure_classpath, free_ports, java, wait_port

NAME = "spark-3.5-jobserver"


def install() -> Path:
    return ensure_classpath(f"{NAME}.pom.xml", NAME)


def _home(workdir: Path, lib: Path) -> Path:
    """What Spark's launcher expects of SPARK_HOME: jars/ (the classpath) and a RELEASE file."""
    home = workdir / "spark-home"
    home.mkdir(exist_ok=True)
    if not (home / "jars").exists():
        (home / "jars").symlink_to(lib)
    (home / "RELEASE").touch()
    return home


@contextlib.contextmanager
def standalone_cluster(workdir: Path) -> Iterator[Cluster]:
    lib = install()
    opens = (ENGINES / "spark-java17-opens.txt").read_text().split()
    master_port, master_ui, worker_ui, job_port, artifact_port, pool_port = free_ports(6)
    master = f"spark://localhost:{master_port}"
    cluster = Cluster(workdir, ["--runner=PortableRunner", f"--job_endpoint=localhost:{job_port}",
                                "--environment_type=EXTERNAL", f"--environment_config=localhost:{pool_port}"])
    environment = {"SPARK_HOME": str(_home(workdir, lib)), "SPARK_SCALA_VERSION": "2.12",
                   "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(workdir / "work")}
    run = [java(), *opens, "-Xmx512m", "-cp", f"{lib}/*"]
    cluster.restarts = {
        "master": [*run, "org.apache.spark.deploy.master.Master", "--host", "localhost", "--port",
                   str(master_port), "--webui-port", str(master_ui)],
        "worker": [*run, "org.apache.spark.deploy.worker.Worker", "--host", "localhost", "--cores", "2",
                   "--memory", "2g", "--webui-port", str(worker_ui), master],
        "jobserver": [*run, "org.apache.beam.runners.spark.SparkJobServerDriver", f"--spark-master-url={master}",
                      f"--job-port={job_port}", f"--artifact-port={artifact_port}", "--expansion-port=-1",
                      f"--artifacts-dir={workdir / 'artifacts'}"],
        "workers": worker_pool(pool_port),
    }
    cluster.environment = environment
    try:
        for name in cluster.restarts:
            cluster.restart(name)
            if name == "master":
                wait_port(master_port, cluster.processes["master"], workdir / "master.log")
        wait_port(worker_ui, cluster.processes["worker"], workdir / "worker.log")
        wait_port(job_port, cluster.processes["jobserver"], workdir / "jobserver.log")
        wait_port(pool_port, cluster.processes["workers"], workdir / "workers.log")
        yield cluster
    finally:
        cluster.stop_all()


def main(argv: list[str] | None = None) -> int:
    return command_line(__doc__, install, standalone_cluster, "Spark standalone cluster", argv)

if __name__ == "__main__":
    sys.exit(main())
