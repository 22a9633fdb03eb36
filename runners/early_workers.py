"""The local runner's workers started while the command builds the graph, not once it has.

FnApiRunner starts its workers when it runs the first stage, after the graph is built, turned into protos and cut
into stages, and the first stage then waits for each worker to start its harness (its options parsed, its gRPC
channels, its logging): a third of a second of a one-file crawl's critical path on a quiet 2-core machine, while
the second core sat idle during the ~0.4 s of the command's graph work (issue 27, target 2: a one-file crawl in
at most 2 s). :func:`start` makes Beam's own ``WorkerHandlerManager`` for the runner's one environment and starts
its workers before the graph is built; :func:`handed_over` gives that manager to the runner's ``run_stages`` in
place of the one it would make, with the pipeline's own environments and the started workers filed under the id
the pipeline gave their environment. Beam is pinned (2.73.0): this replaces a name in its ``fn_runner`` module
while a run starts.
"""

from __future__ import annotations

import contextlib

#: The id the started workers' environment has until the pipeline names it.
EARLY = "beamtrawl-early"


def start(environment, provision_info, count: int):
    """A ``WorkerHandlerManager`` with ``count`` workers started for ``environment`` (Beam's ``Environment``)."""
    from apache_beam.runners import pipeline_context
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    manager = worker_handlers.WorkerHandlerManager(
        {EARLY: environment.to_runner_api(pipeline_context.PipelineContext())}, provision_info)
    try:
        manager.get_worker_handlers(EARLY, count)
    except BaseException:
        manager.close_all()
        raise
    return manager


@contextlib.contextmanager
def handed_over(manager):
    """While a run starts, FnApiRunner's ``run_stages`` gets ``manager`` for the manager it makes."""
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    made = fn_runner.WorkerHandlerManager

    def adopted(environments, _provision_info):
        fn_runner.WorkerHandlerManager = made  # once
        ours = manager._environments[EARLY]
        started = manager._cached_handlers.pop(EARLY, [])
        manager._environments = environments
        same = [name for name, each in environments.items() if (each.urn, each.payload) == (ours.urn, ours.payload)]
        if same:
            manager._cached_handlers[same[0]] = started
        else:  # not the pipeline's environment after all: ended with the run, and Beam starts its own
            manager._cached_handlers[EARLY] = started
        return manager

    fn_runner.WorkerHandlerManager = adopted
    try:
        yield
    finally:
        fn_runner.WorkerHandlerManager = made
