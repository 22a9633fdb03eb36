"""``beamtrawl crawl --dry-run CONFIG``: everything a crawl checks before it writes, and nothing written.

It reaches the index (or the folder it would be created in) and every start URL with the crawl's own
logins — a folder or share is listed one level, a mailbox folder examined, a web start page fetched —
and prints what would be crawled and which guards would apply. Exit codes are a crawl's: 2 when the
index cannot be used, 1 when a start URL cannot be reached, else 0.
"""

from __future__ import annotations

import itertools
import os
import tempfile

from beamtrawl.pipeline.report import EXIT_DOCUMENTS_FAILED, EXIT_FATAL, EXIT_OK, terminal_safe
from beamtrawl.transforms.index import make_target
from beamtrawl.transforms.index.base import IndexUnavailable

#: Outputs of a start URL's discovery looked at before it counts as reached.
PEEK = 50


def _nearest_folder(path: str) -> str:
    folder = os.path.abspath(path)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return folder


def _unwritable(path: str, is_folder: bool) -> str:
    """Why a crawl could not write ``path`` (a file, or a folder it creates), or "" — checked as the crawl
    would, leaving nothing behind; a folder URL (``s3://``…) by a probe file, as the crawl checks it."""
    if "://" in path:
        from beamtrawl.pipeline.crawl import unwritable_url  # Beam's file systems: only for a URL

        return unwritable_url(path) if is_folder else ""
    if not is_folder and os.path.exists(path):
        return "" if os.access(path, os.W_OK) and not os.path.isdir(path) else "not writable"
    try:
        tempfile.TemporaryFile(dir=_nearest_folder(path if is_folder else os.path.dirname(path) or ".")).close()
    except OSError as why:
        return why.strerror or str(why)
    return ""


def _index_line(config) -> tuple[str, int, int | None]:
    """(what the index says, exit code, documents in it)."""
    target = make_target(config.index)
    try:
        target.check()
        if problem := target.place_problem(create=False):  # readable is not writable (a read-only login)
            return f"index {config.index.label}: {problem}", EXIT_FATAL, None
        return f"index {config.index.label}: reachable", EXIT_OK, target.count()
    except IndexUnavailable as err:
        if problem := target.place_problem(create=False):
            return f"index {config.index.label}: {problem}", EXIT_FATAL, None
        if "no index" in str(err) and "reached" not in str(err):
            return f"index {config.index.label}: reachable; the index will be created", EXIT_OK, 0
        if "run beamtrawl crawl once to upgrade it" in str(err):  # what search says of an older schema
            line = f"index {config.index.label}: reachable; made by an older beamtrawl, this crawl upgrades it"
            return line, EXIT_OK, target.count()
        return f"index: {err}", EXIT_FATAL, None
    finally:
        target.close()


def _reach(config, url: str) -> str:
    """'' when ``url`` answered, else why not."""
    from beamtrawl.transforms.accept import Rules
    from beamtrawl.transforms.records import Entry, Event, FrontierItem
    from beamtrawl.transforms.sources import Sources
    from beamtrawl.transforms.sources.base import Probe, capable
    from beamtrawl.transforms.sources.settings import SourceSettings

    source = Sources(SourceSettings.from_config(config))(url)
    if capable(source, Probe):  # its expand would crawl far more than the start URL (a web site)
        return source.probe(url)
    found = source.expand(FrontierItem(url, url, 0, url, [], "", ""), Rules(config),
                                          config.follow_symlinks, PEEK)
    for record in itertools.islice(found, PEEK):
        if record.route == Event.route and record.reason and record.url in (url, url.rstrip("/")):
            return record.reason
        if record.route in (Entry.route, FrontierItem.route):
            return ""
    return ""


def _owner_line(config) -> str:
    """Why a crawl would be refused because another configuration filled the index (pipeline/owner.py), or ""."""
    from beamtrawl.pipeline.owner import OtherConfiguration, check_owner, owner_of

    try:
        check_owner(make_target(config.index).read_owner(), owner_of(config, [s.url for s in config.start]),
                    config.index.label)
    except OtherConfiguration as err:
        return f"refused: {err}"
    return ""


def dry_run(config, runner: str | None, report_to: str | None = None, other_config: bool = False) -> tuple[str, int]:
    """(the lines to print, the exit code); ``other_config``: ``--force-other-config`` was given."""
    index_line, code, documents = _index_line(config)
    lines = [f"configuration {config.source}: valid", index_line]
    if not other_config and (refusal := _owner_line(config)):
        lines.append(refusal)
        code = EXIT_FATAL
    for what, path, is_folder in (("report", config.report, False), ("report copy", report_to, False),
                                  ("work folder", config.work_dir, True)):
        if path and path != "-" and (why := _unwritable(path, is_folder)):
            lines.append(f"{what} {path}: cannot be written ({why})")
            code = EXIT_FATAL
    for start in config.start:
        try:
            problem = _reach(config, start.url)
        except Exception as err:  # noqa: BLE001 - a dry run reports every start URL, whatever one raised
            problem = f"{type(err).__name__}: {err}"
        what = ", ".join(w for w, on in (("followed", start.parse), ("indexed", start.index)) if on)
        lines.append(terminal_safe(f"start {start.url} ({what}): {'reachable' if not problem else problem}"))
        if problem:
            code = max(code, EXIT_DOCUMENTS_FAILED)
    lines.append(f"rules: {len(config.whitelist)} whitelist, {len(config.blacklist)} blacklist entries; "
                 f"max_depth {config.max_depth if config.max_depth is not None else 'none'}; "
                 f"preparators: {', '.join(p.name for p in config.preparators) or 'none'}")
    deletable = "" if documents is None else (
        f" (of the {documents} documents now indexed, at most {int(documents * config.max_delete_ratio)} may go)")
    lines.append(f"guards: no deletes if more than {config.max_failed_ratio:.0%} of documents fail or deletes "
                 f"would remove more than {config.max_delete_ratio:.0%} of the index{deletable}")
    lines.append(f"runner: {runner or 'direct'}; nothing was written")
    return "\n".join(lines), code
