"""``beamtrawl explain URL_OR_PATH --config CONFIG``: why a document is, or is not, in the index.

The question fscrawler's users ask in issue after issue. The answer is assembled from what decides it, each
asked the way the crawl asks it, never a second copy of a rule:

- scope and rules: the start URL it lies under, the whitelist and blacklist entry (by position) that decide
  it, ``max_depth``, a plugin's dynamic blacklist (transforms/accept.py, ``Rules``);
- for a web page, its host's robots.txt as it is now;
- the thing itself, for a local file: there or not, a symbolic link the crawl does not follow, over
  ``max_file_size``, changed since it was indexed;
- what the last crawls recorded of it or of a folder above it (pipeline/history.py: robots.txt, dead links,
  failures, folders that could not be listed, deletes);
- the index's record: found under which root, its type, the preparation's outcome and fingerprint (the
  current configuration's, or not: then the next crawl prepares it again), its groups and denies, and so
  who may see it.
"""

from __future__ import annotations

import os
from pathlib import Path

from beamtrawl.pipeline import history
from beamtrawl.pipeline.report import plural, terminal_safe
from beamtrawl.transforms.records import EVERYONE
from beamtrawl.transforms.sources import by_host, local_path
from beamtrawl.transforms.urls import depth_below, doc_id, is_under, normalize_url


def as_url(text: str) -> str:
    """The URL a crawl would give ``text``: a local path becomes its ``file://`` URL."""
    if "://" in text:
        return normalize_url(text)
    return normalize_url(Path(text).absolute().as_uri())


def explain(config, text: str) -> list[str]:
    """The lines of the answer, most telling first."""
    from beamtrawl.pipeline.crawl import preparation_fingerprint
    from beamtrawl.transforms.accept import Rules
    from beamtrawl.transforms.index import make_target

    url = as_url(text)
    rules = Rules(config)
    lines = [terminal_safe(url)]
    root = rules.root_of(url)
    target = make_target(config.index)
    try:
        target.check()
        record = target.record(doc_id(url))
    finally:
        target.close()
    lines.append(_in_index(record, config))
    lines += _scope(config, rules, url, root)
    if root is not None or record is not None:  # a file neither crawled nor in the index is none of its business
        lines += _on_disk(config, url, record)
    lines += _robots(config, url, root)
    if record is not None:
        lines += _preparation(record, preparation_fingerprint(config.preparators, config), config, url)
        lines.append(_who_sees(record))
    lines += _recorded(config, url)
    return [terminal_safe(line) for line in lines]


def _in_index(record: dict | None, config) -> str:
    if record is None:
        return f"not in the index {config.index.label}"
    return f"in the index {config.index.label} since {record['indexed_at']}, found under {record['root']}"


def _scope(config, rules, url: str, root: str | None) -> list[str]:
    """Which start URL, whitelist and blacklist entry decide it, and its depth."""
    if root is None:
        return ["found by no start URL: it lies under none of them (" + ", ".join(rules.roots) + ")"]
    position = next(i for i, s in enumerate(config.start) if s.url == root)
    lines = [f"lies under start[{position}] {root}"]
    white = next((w for w in config.whitelist if w.matches(url)), None)
    black = next((b for b in config.blacklist if b.matches(url)), None)
    if white is None:
        lines.append("declined: it matches no whitelist entry")
    elif black is not None:
        lines.append(f"declined by {black.describe()} (accepted by {_describe(white)} before it)")
    else:
        lines.append(f"accepted by {_describe(white)}; no blacklist entry matches it")
    if not by_host(url) and config.max_depth is not None:  # a ByHost source's depth is link hops, not its path
        depth = depth_below(url, root)
        lines.append(f"{depth} levels below its start URL, max_depth is {config.max_depth}"
                     + (": declined, too deep" if depth > config.max_depth else ""))
    if white is not None and black is None and rules.plugins.implements("check_dynamic_blacklist") and \
            rules.plugins.any_true("check_dynamic_blacklist", url, url=url, source_url="", source_link_text=""):
        lines.append("declined by a plugin's dynamic blacklist (check_dynamic_blacklist says so now)")
    return lines


def _robots(config, url: str, root: str | None) -> list[str]:
    """For a document under a start URL: what its source says of it now (its Explains capability: a web page's
    robots.txt, asked as the crawl asks it)."""
    from beamtrawl.transforms.sources import RegistryError, Sources
    from beamtrawl.transforms.sources.base import Explains, capable
    from beamtrawl.transforms.sources.settings import SourceSettings

    try:
        source = None if root is None else Sources(SourceSettings.from_config(config))(url)
    except RegistryError:
        return []
    return list(source.explain(url)) if capable(source, Explains) else []


def _describe(pattern) -> str:
    """A rule by its place in the file; the whitelist a file without one gets is its start URLs' prefixes."""
    return pattern.describe() if pattern.where else f"the start URL's prefix {pattern.prefix} (no whitelist set)"


def _on_disk(config, url: str, record: dict | None) -> list[str]:
    """For a local file: whether it is there, a link the crawl skips, over the size limit, changed since."""
    path = local_path(url)
    if path is None:
        return []
    if os.path.islink(path) and not config.follow_symlinks:
        return ["a symbolic link: skipped, not followed (follow_symlinks is false)"]
    try:
        st = os.stat(path)
    except ValueError:  # a NUL in the path: no file has that name
        return ["not on disk: no file can have that name (it holds a NUL character)"]
    except OSError as err:
        return [f"not on disk: {err.strerror}" + ("; the next crawl that lists its folder completely deletes it"
                                                  if record is not None else "")]
    lines = []
    if not os.path.isdir(path) and st.st_size > config.max_file_size:
        lines.append(f"{st.st_size:,} bytes, over max_file_size ({config.max_file_size:,}): indexed by metadata only")
    if record is not None and not os.path.isdir(path):
        same = (st.st_size, st.st_mtime_ns) == (record["size"], record["mtime_ns"])
        lines.append("unchanged since it was indexed (size and modification time)" if same else
                     "changed since it was indexed: the next crawl prepares it again")
    return lines


def _preparation(record: dict, fingerprint: str, config, url: str) -> list[str]:
    from beamtrawl.transforms.preparators import chain_for

    outcome = record["preparation_error"] or "prepared completely"
    same = record["prep_fingerprint"] == fingerprint
    chain = chain_for(config.preparators, record["mimetype"], url)
    by = f" by {chain[0].name}" if chain else ""
    return [f"type {record['mimetype']}, {record['size']:,} bytes; last preparation{by}: {outcome}",
            f"preparation fingerprint {record['prep_fingerprint']}" + (
                ", the current configuration's" if same else
                f", not the current configuration's ({fingerprint}): the next crawl prepares it again")]


def _who_sees(record: dict) -> str:
    groups, denied = record["groups"], record["denied"]
    if EVERYONE in denied:
        return "hidden from every searcher: its source no longer says who may read it (access revoked)"
    seen = f"visible to members of {', '.join(groups)}" if groups else "public: every searcher sees it"
    return seen + (f"; denied to {', '.join(denied)}" if denied else "")


def _recorded(config, url: str) -> list[str]:
    """What the last crawls said of it or of a folder, share or host above it."""
    lines = []
    crawls = history.crawls(config.work_dir)
    for crawl in crawls:
        when = crawl.get("finished_at") or crawl.get("started_at") or "?"
        for line in crawl.get("lines", []):
            if line["url"] and (line["url"] == url or is_under(url, line["url"].rstrip("/"))):
                about = "" if line["url"] == url else f" (of {line['url']})"
                lines.append(f"crawl of {when}: {line['stage']}, {line['kind']}{about}: {line['reason']}")
        if url in crawl.get("deleted_urls", []):
            lines.append(f"crawl of {when}: deleted from the index")
    if not crawls:
        lines.append("no crawl recorded yet in " + os.path.join(config.work_dir, "history"))
    elif not lines:
        lines.append(f"the last {plural(len(crawls), 'crawl')} recorded no problem with it or with a folder above it "
                     f"(the last: {crawls[0].get('finished_at', '?')}, exit code {crawls[0].get('exit_code')})")
    return lines
