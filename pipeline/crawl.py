"""One crawl, from the driver's side: check the index, build and run the graph, write the report.

Before anything runs, the report path and the work folder must be writable (and the work folder have
some free space): one line and exit 2 otherwise, rather than a raw error after the whole crawl.
Deletes run here, last of all (:func:`_delete_last`): after the pipeline and everything it wrote
succeeded and after the report naming the deletes is on disk, so "exit 2" always means "nothing was
deleted" — except when publishing the index fails afterwards, and then the report lists what was.

The driver hooks run here: ``on_start_crawling`` first, ``on_finish_crawling`` last — also when
the crawl fails (then with a report holding ``fatal``); their failures join the report's problems.
Beam is loaded only when the pipeline runs (pipeline/unchanged.py: a crawl may not need it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from beamtrawl.pipeline import __version__, history, unchanged
from beamtrawl.pipeline import report as reports
from beamtrawl.pipeline.owner import check_owner, owner_of
from beamtrawl.plugins.manager import PluginHost
from beamtrawl.runners.options import check_reachable
from beamtrawl.transforms.index import make_target
from beamtrawl.transforms.preparators import helpers
from beamtrawl.transforms.preparators.chain import MAX_NESTING
from beamtrawl.transforms.records import conform, event
from beamtrawl.transforms.sources import ancestors, local_path
from beamtrawl.transforms.urls import container_key

if TYPE_CHECKING:
    from beamtrawl.pipeline.config import Config

log = logging.getLogger("beamtrawl")


def preparation_fingerprint(preparators, config) -> str:
    """Changes whenever what a document would become changes, so such documents are re-prepared."""
    spec = {
        "version": __version__,
        "preparators": [[p.name, p.preparator, f"{p.func.__module__}.{p.func.__qualname__}",
                         getattr(sys.modules.get(p.func.__module__), "REVISION", 0),
                         list(p.mime_types), p.priority, p.url_pattern.pattern if p.url_pattern else None,
                         p.url_and_mime, _params_identity(p.params), p.catch_all] for p in preparators],
        "max_nesting": MAX_NESTING,  # how deep in containers parts are prepared
        "max_content_length": config.preparation.max_content_length,
        "max_summary_length": config.max_summary_length,
        "max_file_size": config.max_file_size,
        "auxiliary_fields": [[f.name, f.regex.pattern, f.regex.flags, f.group, f.value, f.source, f.lower_case,
                              f.store, f.index, f.tokenize] for f in config.auxiliary_fields],
        "plugins": PluginHost(config.plugins).fingerprint(),
        "helpers": helpers.fingerprint(preparators),  # a program installed or upgraded re-prepares
    }
    if config.embeddings:  # only when on, so turning embeddings on re-prepares (and embeds) every document once
        spec["embeddings"] = embedding_identity(config.embeddings)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def embedding_identity(settings) -> str:
    """The embedding model, its version and the passage bounds, for the fingerprint: another model re-embeds."""
    from beamtrawl.transforms.embed import REGISTRY

    return f"{REGISTRY.load(settings.model).identity()} {settings.identity()}"


def _params_identity(params) -> str:
    """A preparator's parameters as the fingerprint knows them: a section's settings (ocr) by their identity."""
    return repr(tuple((key, value.identity() if hasattr(value, "identity") else value) for key, value in params))


def _stage_seconds(result) -> dict[str, float]:
    from apache_beam.metrics.metric import MetricsFilter

    try:
        counters = result.metrics().query(MetricsFilter().with_namespace("stage_us"))["counters"]
    except Exception:  # noqa: BLE001 - some runners report no metrics; timings are optional
        return {}
    seconds: dict[str, float] = {}
    for counter in counters:
        value = counter.committed if counter.committed is not None else counter.attempted
        seconds[counter.key.metric.name] = seconds.get(counter.key.metric.name, 0) + (value or 0) / 1e6
    return {name: round(s, 3) for name, s in sorted(seconds.items())}


def _rules_unmatched(result, config) -> list[str]:
    """Warnings for whitelist, blacklist and url_rules entries that decided no URL in this crawl (a
    rule that silently matches nothing, such as a regex spelled with percent-escapes, is a hole)."""
    from apache_beam.metrics.metric import MetricsFilter
    from beamtrawl.transforms.accept import RULES_MATCHED
    from beamtrawl.transforms.enrich.access import UrlRules

    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(RULES_MATCHED))["counters"]
    except Exception:  # noqa: BLE001 - a runner that reports no metrics cannot tell: no warnings
        return []
    matched = {c.key.metric.name for c in counters if (c.committed if c.committed is not None else c.attempted)}
    patterns = [*config.whitelist, *(p for p in config.blacklist if not _common_exclusion(p)),
                *(p for c in config.access_control if isinstance(c, UrlRules) for p, _groups in c.rules)]
    return [f"{p.describe()} matched no URL in this crawl" for p in patterns if p.where and p.where not in matched]


#: Blacklist regexes that guard against what a tree may or may not hold (``beamtrawl init`` writes them):
#: that one matched nothing says nothing, so it is no warning on every crawl of a tree without a ``.git``.
COMMON_EXCLUSIONS = frozenset({r".*/\.git/.*", r".*~$"})


def _common_exclusion(pattern) -> bool:
    return pattern.regex is not None and pattern.regex.pattern in COMMON_EXCLUSIONS


class CrawlRefused(Exception):
    """The crawl cannot start (its report or work folder is not writable); ``str()`` is one line."""


def check_start_folders(config, new_index: bool) -> None:
    """Raise :class:`CrawlRefused` for a local start folder or file that is not there, when the index is new:
    the crawl could do nothing but fail on it and leave an empty index. Into an index a crawl filled, a missing
    one is that root failing, its documents kept (a share gone for an hour, an unmounted disk), and the others
    are crawled."""
    missing = [(i, path) for i, s in enumerate(config.start)
               if (path := local_path(s.url)) is not None and not os.path.exists(path)]
    if missing and new_index:
        i, path = missing[0]
        more = f" (and {len(missing) - 1} more start URLs)" if len(missing) > 1 else ""
        raise CrawlRefused(f"{config.source}: start[{i}]: {path} does not exist{more}; nothing was "
                           f"crawled and nothing created")


#: Free space the work folder needs before a crawl starts (its totals, problems and delete candidates).
MIN_WORK_SPACE = 16 * 1024**2


def unwritable_url(folder: str) -> str:
    """Why the pipeline could not write into ``folder``, a URL (``s3://bucket/work``), or "": a probe file written
    and removed through Beam's file systems, as the workers will write there."""
    probe = f"{folder.rstrip('/')}/.probe-{uuid.uuid4().hex[:8]}"
    try:
        files = history.file_systems()
        with files.create(probe) as handle:
            handle.write(b"beamtrawl")
        files.delete([probe])
    except Exception as err:  # noqa: BLE001 - whatever the store's client raises is the one line
        return f"{type(err).__name__}: {err}".splitlines()[0]
    return ""


def check_writable(report_path: str, work_dir: str) -> None:
    """Raise :class:`CrawlRefused` unless the report can be written and the work folder written to (a work
    folder in a bucket by a probe file, before any work)."""
    if "://" in work_dir and (why := unwritable_url(work_dir)):
        raise CrawlRefused(f"{work_dir}: the work folder cannot be written ({why})")
    if "://" not in report_path:
        existed = os.path.exists(report_path)
        try:
            with open(report_path, "a", encoding="utf-8"):
                pass
            if not existed:
                os.remove(report_path)
        except OSError as err:
            raise CrawlRefused(f"{report_path}: the crawl report cannot be written there ({err.strerror})") from None
    if "://" not in work_dir:
        try:
            os.makedirs(work_dir, exist_ok=True)
            probe = os.path.join(work_dir, f".probe-{uuid.uuid4().hex[:8]}")
            with open(probe, "wb") as handle:
                handle.write(b"beamtrawl")
            os.remove(probe)
            free = shutil.disk_usage(work_dir).free
        except OSError as err:
            raise CrawlRefused(f"{work_dir}: the work folder cannot be written ({err.strerror})") from None
        if free < MIN_WORK_SPACE:
            raise CrawlRefused(f"{work_dir}: the work folder has {free // 1024} KiB free, less than the "
                               f"{MIN_WORK_SPACE // 1024**2} MiB a crawl needs")


def _finish(target, report: dict) -> None:
    """Publish what the crawl wrote (the target's finish) and count the index; a failure of either is the
    report's, never an exception."""
    try:
        target.finish(succeeded=reports.exit_code(report) != reports.EXIT_FATAL)
    except Exception as err:  # noqa: BLE001 - e.g. the alias could not be swapped
        deletes = f" after {len(report['deleted_urls'])} deletes ran (the report lists them)" \
            if report.get("deleted_urls") else ""
        report["fatal"] = report.get("fatal") or f"finishing the index failed{deletes}: {err}"
    try:
        report["documents_in_index"] = target.count()
    except Exception:  # noqa: BLE001 - the index may be what failed; the report says so already
        report["documents_in_index"] = None


@dataclass(frozen=True)
class Launch:
    """How the command runs one crawl, beyond what the configuration says."""

    runner: str | None = None  # direct (None) or a Beam runner name
    beam_args: tuple[str, ...] = ()  # options passed to Beam
    progress: str = "lines"  # how the run shows itself (pipeline/progress.py: "live", "lines", "quiet")
    other_config: bool = False  # crawl into an index another configuration filled (pipeline/owner.py)
    stop: object = None  # the command's Interrupt (pipeline/interrupt.py), told when the deletes run


def crawl(config, launch: Launch = Launch()) -> dict:
    """Run one crawl; returns the report (also written to ``config.report``). An index another configuration
    filled is refused before anything is done, unless ``launch.other_config``."""
    owner = owner_of(config, [s.url for s in config.start])
    stored = make_target(config.index).read_owner()
    if not launch.other_config:
        check_owner(stored, owner, config.index.label)
    check_start_folders(config, new_index=stored is None)
    if problem := make_target(config.index).place_problem(create=True):
        raise CrawlRefused(f"index {config.index.label}: {problem}")
    check_writable(config.report, config.work_dir)
    plugins = PluginHost(config.plugins)
    plugins.call("on_start_crawling", config=config)
    try:
        report = _crawl(config, launch, plugins, owner)
    except BaseException as err:
        plugins.call("on_finish_crawling", config=config, report={"fatal": f"{type(err).__name__}: {err}"})
        raise
    plugins.call("on_finish_crawling", config=config, report=report)
    problems = [{k: p[k] for k in ("url", "stage", "reason", "kind")}
                for p in (conform(e)._asdict() for e in plugins.problems())]
    if problems:
        report["problems"].extend(problems)
        report["counts"]["plugin_failed"] = report["counts"].get("plugin_failed", 0) + len(problems)
    _write_last(report, config.report)
    history.keep(report, config.work_dir)  # for beamtrawl explain (pipeline/explain.py)
    return report


def _write_last(report: dict, path: str) -> None:
    """Write the final report. Deletes may have run by now, so a failure here must not turn into exit 2
    (which promises none ran): it is one line, and at least exit 1."""
    try:
        reports.write_report(report, path)
    except OSError as err:
        log.error("%s: the crawl report could not be written (%s)", path, err.strerror or err)
        report["exit_code"] = max(report["exit_code"], reports.EXIT_DOCUMENTS_FAILED)


def _crawl(config, launch: Launch, plugins: PluginHost, owner: dict) -> dict:
    runner, beam_args, stop = launch.runner, list(launch.beam_args), launch.stop
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    check_reachable(runner, beam_args)  # a cluster that is down: one line, before the index is touched
    target = make_target(config.index)
    preparators = config.preparators
    fingerprint = preparation_fingerprint(preparators, config)
    target.prepare()
    target.write_owner(owner)
    before = target.count()
    context = {"config": config.source, "index": config.index.label, "runner": runner or "direct",
               "started_at": started_at, "documents_in_index_before": before, "report_path": config.report}
    state = None if config.reprepare else unchanged.sources_state(config, fingerprint)
    if state is not None and unchanged.matches(target.read_state(), state, before):
        return _unchanged_report(target, state, before, context, started)

    from beamtrawl.runners import heartbeat, pipeline_options
    from beamtrawl.runners.options import with_defaults

    stall_s = heartbeat.default_bound(config.preparation.timeout)  # what preparation may take: the bound's default
    options = pipeline_options(runner, with_defaults(beam_args, worker_stall_timeout=f"{stall_s:g}"), target)
    _store_state(target, None)  # a crawl that does not end clean leaves no state behind
    log.info("crawling %s into %s (%s indexed)", reports.plural(len(config.start), "start URL"),
             config.index.label, reports.plural(before, "document"))
    planned = time.perf_counter()
    run = _Run(config, target, plugins, context, stop)
    outcome = _pass(run, fingerprint, options, launch)
    report = _committed(run, outcome, outcome.staged)
    from beamtrawl.transforms import listings  # Beam: loaded once the pipeline ran

    again = listings.to_list_again(outcome.problems) if reports.exit_code(report) != reports.EXIT_FATAL else []
    listed_again = {}
    if again:
        log.warning("entries of %d containers were lost between their listing and the index (the runner: see "
                    "docs/upstream-beam-lost-chunks.md); listing them again", len(again))
        second = _pass(run, fingerprint, options, launch, tuple(again))
        outcome = _merged(outcome, second, again)
        report = _committed(run, outcome, second.staged)
        listed_again = {"containers": len(again), "first": again[:20], "counts": second.totals,
                        "fatal": second.fatal}
    ran = time.perf_counter()
    totals, problems, candidates = outcome.totals, outcome.problems, outcome.candidates
    if reports.exit_code(report) != reports.EXIT_FATAL and candidates:
        report = _delete_last(run, candidates, totals, problems)
    if listed_again:
        report["listed_again"] = listed_again
    warnings, stage_seconds = outcome.warnings, outcome.stage_seconds
    report["warnings"] = warnings + helpers.warnings(preparators, problems)
    _finish(target, report)
    if state is not None and reports.exit_code(report) == reports.EXIT_OK:
        _store_state(target, {**state, "documents": report["documents_in_index"]})
    target.close()
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    report["timings"] = {"plan_s": round(planned - started, 3), "pipeline_s": round(ran - planned, 3),
                         "total_s": round(time.perf_counter() - started, 3),
                         "stage_busy_s": stage_seconds}
    report["exit_code"] = reports.exit_code(report)
    return report


@dataclass(frozen=True)
class _Pass:
    """What one run of the graph left in its work folder (pipeline/graph.py), or why it failed."""

    fatal: str
    totals: dict
    problems: list
    candidates: list  # delete candidates
    staged: list  # files a table target's workers staged
    warnings: list
    stage_seconds: dict


def _pass(run: _Run, fingerprint: str, options, launch: Launch, again: tuple[str, ...] = ()) -> _Pass:
    """Run the graph once (``again``: a second pass over these containers only) and read back its work folder."""
    import apache_beam as beam
    from beamtrawl.pipeline import graph
    from beamtrawl.pipeline.progress import LiveProgress
    from beamtrawl.runners import make_runner

    config = run.config

    work_dir = f"{config.work_dir.rstrip('/')}/{uuid.uuid4().hex[:12]}"
    if launch.stop is not None:
        launch.stop.work_dir = work_dir
    fatal = ""
    try:
        p = beam.Pipeline(runner=make_runner(options), options=options)
        graph.build(p, config, run.target, fingerprint, graph.Pass(work_dir, again))
        with LiveProgress(launch.progress):
            result = p.run()
            result.wait_until_finish()
        stage_seconds, warnings = _stage_seconds(result), [] if again else _rules_unmatched(result, config)
    except Exception as err:
        log.debug("pipeline failed", exc_info=True)
        fatal, stage_seconds, warnings = f"the pipeline failed: {_cause(err)}", {}, []
    totals, problems, candidates, staged = {}, [], [], []
    if not fatal:
        try:
            totals, problems, candidates, staged = reports.collect(work_dir)
        except Exception as err:
            log.debug("reading the work folder failed", exc_info=True)
            fatal = f"reading the crawl's work folder {work_dir} failed: {type(err).__name__}: {err}".splitlines()[0]
    _remove(work_dir)
    return _Pass(fatal, totals, problems, candidates, staged, warnings, stage_seconds)


#: Counts that a second pass makes again for entries the first already counted (it lists whole containers
#: of which the first saw a part): the report keeps the first pass's, and the second's under ``listed_again``.
_RECOUNTED = frozenset({"discovered", "accepted", "declined", "unchanged", "listed", "in_index", "kept",
                        "skipped", "symlink_skipped", "duplicate"})


def _merged(first: _Pass, second: _Pass, again: list[str]) -> _Pass:
    """The first pass with the containers ``again`` listed by the second: the first's lines about them are
    replaced by what the second found (its own problems, changes and deletes). A second pass that failed
    changes nothing: the first's lines stay, and so do the documents."""
    from beamtrawl.transforms import listings

    if second.fatal:
        return _Pass(first.fatal, first.totals, first.problems, first.candidates, [],
                     [*first.warnings, f"listing {len(again)} containers again failed: {second.fatal}"],
                     first.stage_seconds)
    keys = {container_key(url) for url in again}
    settled = [p for p in first.problems if p["stage"] == listings.STAGE and p["kind"] == "incomplete"
               and any(container_key(url) in keys for url in ancestors(p["url"]))]
    totals = dict(first.totals)
    totals["incomplete"] = totals.get("incomplete", 0) - len(settled)
    for kind, count in second.totals.items():
        if kind not in _RECOUNTED:
            totals[kind] = totals.get(kind, 0) + count
    lost = sum(1 for p in second.problems if p["stage"] == listings.STAGE and p["kind"] == "incomplete")
    note = (f"the runner lost entries of {len(settled)} listings in transit; {len(again)} containers were listed "
            f"again" + (f", {lost} of them lost again (their documents are kept)" if lost else ", completely"))
    settled_ids = {id(p) for p in settled}
    problems = [p for p in first.problems if id(p) not in settled_ids] + second.problems
    deleted = {entry.url for entry in first.candidates}
    candidates = first.candidates + [entry for entry in second.candidates if entry.url not in deleted]
    seconds = {name: round(first.stage_seconds.get(name, 0) + second.stage_seconds.get(name, 0), 3)
               for name in {*first.stage_seconds, *second.stage_seconds}}
    return _Pass("", totals, problems, candidates, [], [*first.warnings, note], dict(sorted(seconds.items())))


def _committed(run: _Run, outcome: _Pass, staged: list[str]) -> dict:
    """The report of ``outcome``, with the files it ``staged`` committed first (an open table)."""
    report = run.report(outcome.totals, outcome.problems, outcome.fatal)
    if reports.exit_code(report) != reports.EXIT_FATAL and staged:
        report = _commit(run, staged, outcome.totals, outcome.problems)
    return report


@dataclass(frozen=True)
class _Run:
    """What the driver's steps after the pipeline share, made once per crawl."""

    config: Config
    target: object  # the index (transforms.index)
    plugins: PluginHost  # the driver's: on_delete_index_entry runs here
    context: dict  # the report's header (pipeline.report.build_report)
    stop: object = None  # the command's Interrupt (pipeline/interrupt.py), or None

    def report(self, totals: dict, problems: list, fatal: str = "") -> dict:
        return reports.build_report(totals, problems, **self.context, fatal=fatal)


def _commit(run: _Run, staged: list[str], totals: dict, problems: list) -> dict:
    """The upserts the workers staged (an open table's files), committed in one transaction before any delete;
    if that fails the crawl is fatal and nothing it wrote is visible."""
    try:
        run.target.commit(staged)
    except Exception as err:
        log.debug("commit failed", exc_info=True)
        reason = " ".join(str(err).split())[:300] or type(err).__name__
        return run.report(totals, problems, fatal=f"committing the crawl's documents to {run.context['index']} "
                                                  f"failed: {reason}; nothing was committed and no deletes ran")
    return run.report(totals, problems)


def _delete_last(run: _Run, candidates, totals: dict, problems: list) -> dict:
    """The crawl's deletes, the very last step: only if the guard allows, and only once the report naming
    them is written (a crawl killed during its deletes leaves that report; the next crawl deletes the
    rest). Returns the report with their outcome and ``deleted_urls``."""
    from beamtrawl.transforms.index.write import (  # Beam: loaded once the pipeline ran
        delete_batches,
        delete_guard,
    )

    config = run.config
    refusal = delete_guard(totals, config.max_failed_ratio, config.max_delete_ratio)
    if refusal:
        events = [event("delete_withheld", "", "delete", refusal, count=len(candidates))]
        return run.report(*_with_events(totals, problems, events))
    pending = run.report(totals, problems)
    pending["deletes_pending"] = sorted(entry.url for entry in candidates)
    try:
        reports.write_report(pending, config.report)
    except OSError as err:
        return run.report(totals, problems, fatal=f"{config.report}: the report could not be written before the "
                                                  f"deletes ({err.strerror}); no deletes ran")
    if run.stop is not None:
        run.stop.deleting = True
    events = delete_batches(run.target, candidates, run.plugins)
    report = run.report(*_with_events(totals, problems, events))
    failed = {e.url for e in events if e.kind == "failed"}
    report["deleted_urls"] = sorted(entry.url for entry in candidates if entry.url not in failed)
    return report


def _with_events(totals: dict, problems: list, events) -> tuple[dict, list]:
    """``totals`` and ``problems`` with the driver's own ``events`` added, as the pipeline would have."""
    totals = dict(totals)
    for e in events:
        totals[e.kind] = totals.get(e.kind, 0) + e.count
    return totals, [*problems, *(e._asdict() for e in events if e.reason)]


_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Exit|Interrupt|Failure)\b[^:]*: ")


def _cause(err: Exception) -> str:
    """One line for a failed pipeline: Beam wraps a worker's exception in a RuntimeError whose message is
    the worker's traceback, so the cause is its last ``SomeError: …`` line (with Beam's ``[while running
    'Stage']``), not its first."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    causes = [line for line in lines if _ERROR_LINE.match(line)]
    return (causes[-1] if causes else f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": "))[:500]


def _store_state(target, state: dict | None) -> None:
    """Store or forget the sources' state (pipeline/unchanged.py). An index that refuses it (a user who may
    not change the mapping) only costs a pipeline run on every crawl. A state it failed to forget cannot
    match again once a mailbox changed: UIDNEXT only grows."""
    try:
        target.write_state(state)
    except Exception as err:  # noqa: BLE001 - see above
        log.warning("the index refused the crawl state (%s); every crawl runs its pipeline", err)


def _unchanged_report(target, state: dict, documents: int, context: dict, started: float) -> dict:
    """The report of a crawl whose sources say nothing changed since the last clean crawl."""
    log.info("every source is as the last crawl left it: the index is up to date")
    target.close()
    totals = {"listed": unchanged.messages(state), "accepted": documents, "unchanged": documents,
              "in_index": documents}  # what the pipeline would count
    report = reports.build_report(totals, [], **context, fatal="")
    report["pipeline_skipped"] = ("every start URL's source reports the state the last clean crawl saw (an IMAP "
                                  "folder: its UIDVALIDITY, UIDNEXT and message count), and the configuration "
                                  "is the same")
    report["documents_in_index"] = documents
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    seconds = round(time.perf_counter() - started, 3)
    report["timings"] = {"plan_s": seconds, "pipeline_s": 0.0, "total_s": seconds, "stage_busy_s": {}}
    report["exit_code"] = reports.exit_code(report)
    return report


def _remove(work_dir: str) -> None:
    try:
        if "://" in work_dir:
            from apache_beam.io.filesystems import FileSystems

            FileSystems.delete([work_dir.rstrip("/") + "/"])  # a folder in a bucket is the prefix's objects
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
            os.rmdir(os.path.dirname(work_dir))  # only if no other crawl is using it
    except Exception:
        log.debug("could not remove %s", work_dir, exc_info=True)
