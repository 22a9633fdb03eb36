"""Reading and defaulting Beam pipeline options given as command-line arguments."""

from __future__ import annotations

import socket


class RunnerError(Exception):
    """The runner cannot run this crawl as asked; the message says why, in one line."""


def option(args: list[str], name: str) -> str | None:
    """The value of ``--name=value`` or ``--name value`` in ``args`` (the last one wins, as in Beam)."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
    return value


def with_defaults(args: list[str], **defaults: str) -> list[str]:
    """Defaults first, so what the user gave wins."""
    return [*(f"--{name}={value}" for name, value in defaults.items()), *args]


#: Seconds to wait for a cluster's endpoint before the crawl gives up, before any work.
REACH_TIMEOUT_S = 10.0


def endpoints(runner: str | None, args: list[str]) -> list[tuple[str, str]]:
    """(what, host:port) a crawl on ``runner`` talks to first: a job server, a JobManager, a Spark master."""
    found = []
    if job := option(args, "job_endpoint"):
        found.append(("the job server", job))
    key = (runner or "").lower().removesuffix("runner")
    master = option([a.replace("--flink-master", "--flink_master", 1) for a in args], "flink_master")
    if key == "flink" and master and master != "[local]" and not job:
        found.append(("the Flink JobManager", master.split("://", 1)[-1]))
    spark = option(args, "spark_master_url") or ""
    if key == "spark" and spark.startswith("spark://") and not job:
        found.append(("the Spark master", spark.removeprefix("spark://")))
    return found


def check_reachable(runner: str | None, args: list[str], timeout: float = REACH_TIMEOUT_S) -> None:
    """Raise :class:`RunnerError` naming the first endpoint of the cluster that does not answer, or the worker
    pool that starts no worker (runners/worker_pool.py), so a crawl aimed at a cluster that is down, or whose
    workers would never connect, stops with one line before it touches the index."""
    for what, endpoint in endpoints(runner, args):
        host, _, port = endpoint.rpartition(":")
        try:
            socket.create_connection((host or "localhost", int(port)), timeout=timeout).close()
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            raise RunnerError(f"{what} at {endpoint} cannot be reached ({reason}); nothing was crawled") from None
    from beamtrawl.runners.worker_pool import check_workers

    check_workers(runner, args)
