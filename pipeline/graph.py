"""The graph of one crawl, wired from the composites in ``transforms/``.

::

    start URLs ─► Discover ─► entries ───────────────┐
                          └─► events                 │
    index ─► ReadSnapshot ─► snapshot ───────────► Freshness ─► new/changed ─► Prepare ─► WriteIndex
                                                              └─► vanished/rejected ─────────► DeleteLast
    all events ─► report files in the work folder (totals, problems)
"""

from __future__ import annotations

import json

import apache_beam as beam
import smart_open

from transforms.discover import Discover
from transforms.freshness import Freshness
from transforms.index.write import DeleteLast, ReadSnapshot, SumByKind, WriteIndex
from transforms.prepare import Prepare
from transforms.records import Event, FrontierItem
from transforms.sources.settings import SourceSettings

TOTALS_FILE, PROBLEMS_FILE = "totals.json", "problems"


def _roots(config) -> list[FrontierItem]:
    return [FrontierItem(s.url, s.url, 0, s.url, [], "", "") for s in config.start if s.parse or s.index]


def _write_totals(totals: dict, path: str) -> None:
    """One file with a fixed name: a retried bundle rewrites it with the same content."""
    with smart_open.open(path, "w", encoding="utf-8") as handle:
        json.dump(totals, handle)


def build(p: beam.Pipeline, config, rules, target, preparators, fingerprint: str, work_dir: str) -> None:
    source_settings = SourceSettings.from_config(config)  # logins travel to workers here, never in records
    entries, discover_events = p | "Discover" >> Discover(
        _roots(config), rules, config.follow_symlinks, config.walk_budget, config.discovery_rounds,
        source_settings)
    snapshot = p | "ReadSnapshot" >> ReadSnapshot(target)
    incomplete = discover_events | "IncompleteSubtrees" >> beam.FlatMap(
        lambda e: [e.url] if e.kind == "incomplete" else []).with_output_types(str)

    to_prepare, to_delete, freshness_events = (entries, snapshot, incomplete) | "Freshness" >> Freshness(
        rules, fingerprint)
    docs, prepare_events = to_prepare | "Prepare" >> Prepare(
        preparators, fingerprint, config.max_file_size, config.max_summary_length, source_settings)
    write_events = docs | "WriteIndex" >> WriteIndex(target)

    before_deletes = (discover_events, freshness_events, prepare_events, write_events) | (
        "EventsBeforeDeletes" >> beam.Flatten().with_output_types(Event))
    totals = before_deletes | "Totals" >> beam.CombineGlobally(SumByKind()).without_defaults()
    delete_events = (to_delete, totals) | "DeleteLast" >> DeleteLast(
        target, config.max_failed_ratio, config.max_delete_ratio)

    events = (before_deletes, delete_events) | "AllEvents" >> beam.Flatten().with_output_types(Event)
    (events
     | "AllTotals" >> beam.CombineGlobally(SumByKind()).without_defaults()
     | "WriteTotals" >> beam.Map(_write_totals, f"{work_dir}/{TOTALS_FILE}"))
    (events
     | "Problems" >> beam.Filter(lambda e: bool(e.reason))
     | "ProblemsJson" >> beam.Map(lambda e: json.dumps(e._asdict()))
     | "WriteProblems" >> beam.io.WriteToText(f"{work_dir}/{PROBLEMS_FILE}"))
