"""Apache Spark through Beam's Spark job server (SparkRunner): ``--spark_master_url local[N]`` (default:
one thread per core) or ``spark://host:7077``. Beam takes the job-server jar
(``org.apache.beam:beam-runners-spark-3-job-server:<beam version>``) from its jar cache, Maven Central, or
``--spark_job_server_jar``. Python workers run LOOPBACK locally, EXTERNAL on a cluster (as for Flink)."""

from __future__ import annotations

import os
import re

from beamtrawl.runners.options import RunnerError, option, with_defaults


def arguments(beam_args: list[str]) -> list[str]:
    master = option(beam_args, "spark_master_url") or f"local[{os.cpu_count() or 1}]"
    if not re.fullmatch(r"local(\[(\d+|\*)\])?|spark://[^/\s]+:\d+", master):
        raise RunnerError(f"spark: --spark_master_url must be local[N] or spark://HOST:PORT, got {master}")
    local = master.startswith("local")
    environment = option(beam_args, "environment_type") or ("LOOPBACK" if local else "EXTERNAL")
    if environment == "EXTERNAL" and not option(beam_args, "environment_config"):
        raise RunnerError("spark: workers of a Spark cluster run EXTERNAL; give --environment_config=HOST:PORT")
    return with_defaults(beam_args, runner="SparkRunner", spark_master_url=master, environment_type=environment)
