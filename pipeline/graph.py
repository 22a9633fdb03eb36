"""The graph of one crawl, wired from the composites in ``transforms/``.

::

    start URLs ─► Discover ─► entries ─┬─► AccessGroups ─┐     (AccessGroups only with access_control)
                          └─► events   │                 │
    start URLs of ByHost sources, the web (+ snapshot) ─► DiscoverByHost ─► entries, events (flattened with the above)
    index ─► ReadSnapshot ─► snapshot ───────────────► Freshness ─► new/changed ─► Prepare ─► WriteIndex
       (where listings compare in place, transforms/compare.py: Discover's claims go to Freshness too, and
        the snapshot is the folders the index holds)
                                                                 │                    └─► no longer read ─┐
                                                                 ├─► access changed, revoked ─► UpdateAccess
                                                                 └─► vanished/rejected ─────────► DeleteLast
    all events ─► report files in the work folder (totals; problems in a file of lines); DeleteLast's delete
    candidates join those lines: the driver deletes them last of all (pipeline/crawl.py); the names of files a
    table target's workers staged too, for the driver's commit before the deletes
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import apache_beam as beam
from beamtrawl.transforms import batches, compare
from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.batches import Batch
from beamtrawl.transforms.compare import InPlace
from beamtrawl.transforms.discover import Discover, DiscoverByHost, DiscoverOptions
from beamtrawl.transforms.embed.stage import Embed
from beamtrawl.transforms.enrich.assign import AssignGroups
from beamtrawl.transforms.faults import DROP_CLAIMS, DROP_ENTRIES, DROP_LISTINGS, fault, in_transit
from beamtrawl.transforms.freshness import Freshness
from beamtrawl.transforms.index.write import (
    PROBLEM_LINE,
    STAGED,
    STAGED_LINE,
    DeleteLast,
    ReadSnapshot,
    SumByKind,
    UpdateAccess,
    WriteIndex,
)
from beamtrawl.transforms.prepare import Prepare, PrepareOptions
from beamtrawl.transforms.records import (
    ACCESS_DENIED,
    Event,
    FrontierItem,
    Listing,
    SnapshotEntry,
    event,
    use_row_coders,
)
from beamtrawl.transforms.sources import ancestors, by_host
from beamtrawl.transforms.urls import container_key, depth_below, host_of

TOTALS_FILE, LINES_FILE = "totals.json", "lines"


def _roots(rules) -> list[FrontierItem]:
    return [FrontierItem(s.url, s.url, 0, s.url, [], "", "") for s in rules.seeds()]


def _again(rules, again: frozenset[str]) -> list[FrontierItem]:
    """A second pass's frontier: the containers it lists again, each under its own start URL at its own depth
    (so the accept decision and the documents' start URL are what the first pass had); a web host is listed
    again from its start URLs."""
    starts = [r for r in _roots(rules) if container_key(r.url) in again or (
        by_host(r.url) and container_key(host_of(r.url)) in again)]
    inner = [FrontierItem(url, root, depth_below(url, root), url, [], "", "") for url in sorted(again)
             if not by_host(url) and (root := rules.root_of(url)) is not None and container_key(root) != url]
    return starts + inner


def _under(url: str, again: frozenset[str]) -> bool:
    return any(container_key(above) in again for above in ancestors(url))


def _write_totals(totals: dict, path: str) -> None:
    """One file with a fixed name: a retried bundle rewrites it with the same content. Through Beam's file systems,
    as the other files of the work folder: in a bucket they have the job's options (``--s3_endpoint_url``, a login)."""
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.create(path) as handle:
        handle.write(json.dumps(totals).encode("utf-8"))


@dataclass(frozen=True)
class Pass:
    """One run of the graph: the work folder its counts, problems and delete candidates go to, and for a
    second pass the containers it lists again (it judges only the indexed documents below them)."""

    work_dir: str
    again: tuple[str, ...] = ()


def _discover(snapshot, rules: Rules, discovery: DiscoverOptions, roots: list, again: bool) -> tuple:
    """(entries, events, listings, claims) of discovery from ``roots``: item by item, and host by host for the sources
    that crawl a host in one call (with the index's ``snapshot`` of each page at hand)."""
    p = snapshot.pipeline
    found = []
    item_roots = [r for r in roots if not by_host(r.url)]
    host_roots = [r for r in roots if by_host(r.url)]
    if rules.declined_starts and not again:
        found.append((p | "EmptyEntries" >> beam.Create([]).with_output_types(Batch),
                      p | "DeclinedStarts" >> beam.Create(
                          [event("declined", url, "discover", "the start URL matches a blacklist entry")
                           for url in rules.declined_starts]).with_output_types(Event),
                      p | "NoListings" >> beam.Create([]).with_output_types(Listing),
                      p | "NoClaims" >> beam.Create([]).with_output_types(Batch)))
    if item_roots or not host_roots:
        found.append(p | "Discover" >> Discover(item_roots, discovery))
    if host_roots:  # web pages are found host by host, with the index's state of each page at hand
        found.append(snapshot | "DiscoverByHost" >> DiscoverByHost(host_roots, discovery))
    if len(found) == 1:
        return found[0]
    return (tuple(f[0] for f in found) | "AllEntries" >> beam.Flatten().with_output_types(Batch),
            tuple(f[1] for f in found) | "AllDiscoverEvents" >> beam.Flatten().with_output_types(Event),
            tuple(f[2] for f in found) | "AllListings" >> beam.Flatten().with_output_types(Listing),
            tuple(f[3] for f in found) | "AllClaims" >> beam.Flatten().with_output_types(Batch))


def build(p: beam.Pipeline, config, target, fingerprint: str, run: Pass) -> None:
    """Wire one crawl of ``config`` into ``p``: writing to ``target``, documents carrying the preparation
    ``fingerprint``; ``run`` says where its results go and what a second pass lists again."""
    work_dir, again = run.work_dir, run.again
    use_row_coders()
    rules = Rules(config)
    keys = frozenset(container_key(url) for url in again)
    roots = _again(rules, keys) if again else _roots(rules)
    in_place = (InPlace(target, fingerprint, fault(DROP_ENTRIES, bool(again)))  # transforms/compare.py
                if compare.possible(config, target, roots, bool(again)) else None)
    discovery = DiscoverOptions.from_config(config, rules, in_place)  # logins travel to workers here, never in records
    snapshot = p | "ReadSnapshot" >> ReadSnapshot(target, by_folder=True, folders_only=in_place is not None)
    if again:
        snapshot = snapshot | "BelowListedAgain" >> beam.FlatMap(
            batches.keep, lambda url: _under(url, keys)).with_output_types(Batch)
    entries, discover_events, listings, claims = _discover(snapshot, rules, discovery, roots, bool(again))
    entries, listings = in_transit(entries, DROP_ENTRIES, bool(again)), in_transit(listings, DROP_LISTINGS, bool(again))
    claims = [in_transit(claims, DROP_CLAIMS)] if in_place is not None else []
    incomplete = discover_events | "IncompleteSubtrees" >> beam.FlatMap(
        lambda e: [e.url] if e.kind == "incomplete" else []).with_output_types(str)
    access_events = []
    if config.access_control:
        entries, failed_access, keep, arrived = entries | "AccessGroups" >> AssignGroups(config.access_control)
        listings = (listings, arrived) | "WithFailedAccess" >> beam.Flatten().with_output_types(Listing)
        access_events.append(failed_access)
        incomplete = (incomplete, keep) | "KeepUnknownGroups" >> beam.Flatten().with_output_types(str)

    denied = discover_events | "AccessDeniedSubtrees" >> beam.FlatMap(
        lambda e: [e.url] if e.kind == ACCESS_DENIED else []).with_output_types(str)
    to_prepare, to_delete, access_changes, freshness_events = (
        entries, snapshot, incomplete, denied, listings, *claims) | "Freshness" >> Freshness(
        rules, fingerprint, config.reprepare, keys or None, in_place and in_place.index)
    access_events = [*access_events, access_changes | "UpdateAccess" >> UpdateAccess(target)]
    docs, prepare_events, no_longer_read = to_prepare | "Prepare" >> Prepare(
        PrepareOptions.from_config(config, config.preparators, fingerprint), rules.plugins, discovery.sources)
    if config.embeddings:  # issue 31: passages of the prepared (new and changed) documents embedded
        docs, embed_events = docs | "Embed" >> Embed(config.embeddings)
        prepare_events = (prepare_events, embed_events) | "WithEmbedEvents" >> beam.Flatten().with_output_types(Event)
    write_events = docs | "WriteIndex" >> WriteIndex(target, rules.plugins)

    deletes = (to_delete, no_longer_read) | "AllDeletes" >> beam.Flatten().with_output_types(SnapshotEntry) | (
        "DeleteLast" >> DeleteLast())

    events = (discover_events, *access_events, freshness_events, prepare_events, write_events) | (
        "AllEvents" >> beam.Flatten().with_output_types(Event))
    (events
     | "AllTotals" >> beam.CombineGlobally(SumByKind()).without_defaults()
     | "WriteTotals" >> beam.Map(_write_totals, f"{work_dir}/{TOTALS_FILE}"))
    # One file of lines for the problems, the delete candidates and the names of the files the workers staged (an
    # open-table target only), each line tagged: one sink is four bundles and a dozen transforms, where a sink each
    # was three times that (issue 27, target 2). Nothing to write is no file (skip_if_empty), which reads back as no
    # lines: Beam's S3 file system cannot write an empty file to a work folder in a bucket (a multipart upload of no
    # parts, which S3 refuses).
    ((events | "ProblemsAndStaged" >> beam.FlatMap(_event_lines).with_output_types(str), deletes)
     | "WorkLines" >> beam.Flatten().with_output_types(str)
     | "WriteWorkLines" >> beam.io.WriteToText(f"{work_dir}/{LINES_FILE}", skip_if_empty=True))


def _event_lines(e: Event) -> list[str]:
    """The work folder's lines for an event: a problem (one with a reason) as JSON, a staged file by its name."""
    lines = [PROBLEM_LINE + json.dumps(e._asdict())] if e.reason else []
    if e.kind == STAGED:
        lines.append(STAGED_LINE + e.url)
    return lines
