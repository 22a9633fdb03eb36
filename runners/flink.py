"""Apache Flink through Beam's Flink job server (FlinkRunner).

``--flink_master [local]`` (the default) runs an embedded Flink MiniCluster inside the job server and the
Python workers in LOOPBACK mode, inside this process. ``--flink_master host:port`` names the REST endpoint
of a real cluster's JobManager; its Python workers then run EXTERNAL: start
``python -m beamtrawl.runners.worker_pool --service_port=50000`` beside every TaskManager (runners/worker_pool.py:
Beam's own pool starts workers with the ``python`` on PATH) and pass ``--environment_config=localhost:50000``. Beam finds the job-server jar
(``org.apache.beam:beam-runners-flink-<flink>-job-server:<beam version>``) in ``~/.apache_beam/cache/jars``,
downloads it from Maven Central once, or takes ``--flink_job_server_jar PATH`` (docs/clusters.md: one built
from Maven artifacts); the command stops the job server it started before it exits. A job server already
running is used with ``--runner=PortableRunner --job_endpoint=HOST:PORT``.

File start URLs on a cluster: every TaskManager must see the same paths (a shared mount).

A job server Beam starts runs in the current folder, where Flink takes ``./plugins`` for its plugin folder:
in a checkout of beamtrawl that is the project's own ``plugins/`` package, and Flink failed ("Cannot find any
jar files for plugin in directory [plugins/__pycache__]"). Unless ``FLINK_PLUGINS_DIR`` is set, it is an
empty folder of beamtrawl's.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from beamtrawl.runners.options import RunnerError, option, with_defaults


def arguments(beam_args: list[str]) -> list[str]:
    args = [a.replace("--flink-master", "--flink_master", 1) for a in beam_args]
    master = option(args, "flink_master") or "[local]"
    local = master == "[local]"
    environment = option(args, "environment_type") or ("LOOPBACK" if local else "EXTERNAL")
    if environment == "EXTERNAL" and not option(args, "environment_config"):
        raise RunnerError("flink: workers of a Flink cluster run EXTERNAL; give --environment_config=HOST:PORT "
                          "of the worker pool started beside each TaskManager")
    if not local and ":" not in master:
        raise RunnerError(f"flink: --flink_master must be [local] or HOST:PORT, got {master}")
    _own_plugin_folder()
    return with_defaults(args, runner="FlinkRunner", flink_master=master, environment_type=environment)


def _own_plugin_folder() -> None:
    """Point the job server Beam starts (it inherits this environment) at an empty plugin folder."""
    if not os.environ.get("FLINK_PLUGINS_DIR"):
        folder = Path(tempfile.gettempdir()) / f"beamtrawl-flink-plugins-{os.getuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        os.environ["FLINK_PLUGINS_DIR"] = str(folder)
