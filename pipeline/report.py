"""The crawl report: counts, every problem with URL, stage and reason, timings; JSON beside the index."""

from __future__ import annotations

import json
import re
from typing import Any

#: The counts every report has, in the order the summary shows them.
COUNTS = ("discovered", "accepted", "declined", "new", "changed", "unchanged", "read", "prepared",
          "written", "failed", "deleted", "kept", "vanished", "no_longer_accepted", "delete_withheld",
          "incomplete", "oversize", "duplicate", "skipped", "symlink_skipped", "listed", "in_index",
          "write_failed", "plugin_failed", "truncated", "metadata_only", "fallback", "fetched", "not_modified",
          "dead_link", "robots_denied", "unsupported", "skipped_unread", "no_longer_read", "revoked", "ocr_pages",
          "embedded", "not_embedded")

EXIT_OK, EXIT_DOCUMENTS_FAILED, EXIT_FATAL = 0, 1, 2


def _read_lines(pattern: str) -> list[str]:
    from apache_beam.io.filesystems import FileSystems  # Beam loads slowly: only after a pipeline ran

    lines = []
    for match in FileSystems.match([pattern])[0].metadata_list:
        with FileSystems.open(match.path) as handle:
            lines.extend(line for line in handle.read().decode("utf-8").splitlines() if line)
    return lines


def collect(work_dir: str) -> tuple[dict[str, int], list[dict[str, Any]], list, list[str]]:
    """Read back what the pipeline wrote into its work folder: the totals, the problems, the delete candidates
    (transforms/index/write.py) and the names of the files the workers staged for the index's commit."""
    from beamtrawl.pipeline.graph import LINES_FILE, TOTALS_FILE
    from beamtrawl.transforms.index.write import DELETE_LINE, PROBLEM_LINE, STAGED_LINE, read_candidates

    totals: dict[str, int] = {}
    for line in _read_lines(f"{work_dir}/{TOTALS_FILE}"):
        totals.update(json.loads(line))
    lines: dict[str, list[str]] = {PROBLEM_LINE: [], DELETE_LINE: [], STAGED_LINE: []}
    for line in _read_lines(f"{work_dir}/{LINES_FILE}*"):
        lines[line[0]].append(line[1:])
    problems = [json.loads(line) for line in lines[PROBLEM_LINE]]
    problems.sort(key=lambda p: (p["stage"], p["url"], p["kind"]))
    return totals, problems, read_candidates(lines[DELETE_LINE]), sorted(name for name in lines[STAGED_LINE] if name)


def build_report(totals: dict[str, int], problems: list[dict], **context: Any) -> dict[str, Any]:
    counts = {kind: totals.get(kind, 0) for kind in COUNTS}
    counts["discovered"] = counts["accepted"] + counts["declined"] + sum(
        1 for p in problems if p["stage"] == "discover" and p["kind"] == "failed")
    withheld = sorted({p["reason"] for p in problems if p["kind"] == "delete_withheld"})
    report = dict(context)
    if counts["write_failed"] and not report.get("fatal"):
        first = next((p["reason"] for p in problems if p["stage"] == "write"), "no reason given")
        report["fatal"] = (f"{counts['write_failed']} documents could not be written to the index "
                           f"(first: {first}); no deletes ran")
    report["counts"] = counts
    for kind in ("unsupported", "skipped_unread"):
        if by_type := by_mime_type(totals, kind):
            report[f"{kind}_types"] = by_type
    report["deletes_withheld"] = withheld[0] if withheld else ""
    report["problems"] = [{k: p[k] for k in ("url", "stage", "reason", "kind")}
                          for p in problems if p["kind"] != "delete_withheld"]
    return report


#: MIME types a report lists by name for one count; the rest are summed as "other types".
MAX_TYPES = 50


def by_mime_type(totals: dict[str, int], kind: str) -> dict[str, int]:
    """``{MIME type: count}`` of one count's documents, most first (transforms/records.py: BY_TYPE)."""
    from beamtrawl.transforms.records import BY_TYPE

    prefix = f"{kind}{BY_TYPE}"
    found = sorted(((k[len(prefix):], n) for k, n in totals.items() if k.startswith(prefix)),
                   key=lambda item: (-item[1], item[0]))
    listed = dict(found[:MAX_TYPES])
    if len(found) > MAX_TYPES:
        listed["other types"] = sum(n for _, n in found[MAX_TYPES:])
    return listed


def _types_line(by_type: dict[str, int], shown: int = 5) -> str:
    """``20 application/x-sharedlib, 12 image/png and 3 more types``."""
    items = [f"{n:,} {mime}" for mime, n in list(by_type.items())[:shown]]
    rest = len(by_type) - shown
    return ", ".join(items) + (f" and {rest} more types (the report lists them)" if rest > 0 else "")


def exit_code(report: dict) -> int:
    counts = report["counts"]
    if report.get("fatal") or report["deletes_withheld"]:
        return EXIT_FATAL
    if counts["failed"] or counts["incomplete"]:
        return EXIT_DOCUMENTS_FAILED
    return EXIT_OK


def write_report(report: dict, path: str) -> None:
    """To a local path or any URL smart_open writes (loaded only for those: it takes 0.2 s)."""
    if "://" in path:
        import smart_open

        opener = smart_open.open
    else:
        opener = open
    with opener(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Text from documents shown on a terminal: control characters (escape sequences that could
    rewrite the screen or the title bar) become spaces."""
    return _CONTROL.sub(" ", text)


#: Counts the summary names only when they are not zero: a zero there says nothing.
_NOTEWORTHY = (("deleted", "deleted"), ("kept", "kept (their folder, host or start URL could not be crawled completely)"),
               ("oversize", "over max_file_size (metadata only)"), ("dead_link", "dead links"),
               ("robots_denied", "denied by robots.txt"), ("plugin_failed", "plugin failures"),
               ("revoked", "hidden at once (access revoked at the source)"),
               ("ocr_pages", "pages or images OCR'd"))


def plural(count: int, word: str) -> str:
    """``1 start URL``, ``25,719 documents``: the number as the live line shows it, the noun as people write it."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary(report: dict) -> str:
    """A few lines for the terminal; numbers written as the live progress line writes them (25,719)."""
    c = report["counts"]
    documents = (f"documents: {c['new']:,} new, {c['changed']:,} changed, {c['unchanged']:,} unchanged, "
                 f"{c['failed']:,} failed")
    documents += "".join(f", {c[kind]:,} {words}" for kind, words in _NOTEWORTHY if c.get(kind))
    held = report.get("documents_in_index", "?")
    index = f"index holds {held:,}" if isinstance(held, int) else f"index holds {held}"
    if report.get("fatal") and not any(c.values()):  # the pipeline failed: its counts never came back
        before = report.get("documents_in_index_before", "?")
        lines = [f"the crawl's counts are unknown: it failed before they were complete; {index} ({before} before)"]
    else:
        lines = [f"discovered {c['discovered']:,}: {c['accepted']:,} documents accepted, {c['declined']:,} declined",
                 documents, f"read {plural(c['read'], 'document')}, wrote {c['written']:,}; {index}"]
    lines.append(f"took {report['timings']['total_s']:.1f} s; report: {report.get('report_path', '')}")
    lines += [f"warning: {w}" for w in report.get("warnings", ())]
    if c.get("unsupported"):
        lines.append(f"{plural(c['unsupported'], 'document')} of types no preparator reads, indexed by name, size and "
                     f"date (not failed): {_types_line(report.get('unsupported_types', {}))}")
    if c.get("symlink_skipped"):
        lines.append(f"{c['symlink_skipped']:,} symbolic links skipped, not followed (follow_symlinks: true "
                     f"follows them, each target indexed once)")
    if c.get("skipped_unread"):
        lines.append(f"{plural(c['skipped_unread'], 'file')} of types no preparator reads skipped (metadata_only is "
                     f"off): {_types_line(report.get('skipped_unread_types', {}))}")
    if report.get("pipeline_skipped"):
        lines.append(f"nothing to read: {report['pipeline_skipped']}")
    if report["deletes_withheld"]:
        lines.append(f"NO DELETES RAN: {report['deletes_withheld']}")
    if report.get("fatal"):
        lines.append(f"FAILED: {report['fatal']}")
    shown = report["problems"][:10]
    for problem in shown:
        lines.append(terminal_safe(f"  {problem['stage']}: {problem['url'] or '-'}: {problem['reason']}"))
    if len(report["problems"]) > len(shown):
        lines.append(f"  … and {len(report['problems']) - len(shown)} more problems in the report")
    return "\n".join(lines)


#: The counts of the machine-readable last line, in this order.
SUMMARY_LINE_COUNTS = ("discovered", "new", "changed", "unchanged", "failed", "written", "deleted", "kept")


def summary_line(report: dict) -> str:
    """One line for log scrapers, the last a crawl prints: ``beamtrawl-summary exit=1 new=3 … seconds=4.2``."""
    c = report["counts"]
    fields = [f"exit={report['exit_code']}", *(f"{k}={c.get(k, 0)}" for k in SUMMARY_LINE_COUNTS),
              f"problems={len(report['problems'])}", f"in_index={report.get('documents_in_index')}",
              f"seconds={report['timings']['total_s']:.1f}",
              f"deletes_withheld={'yes' if report['deletes_withheld'] else 'no'}",
              f"fatal={'yes' if report.get('fatal') else 'no'}"]
    return "beamtrawl-summary " + " ".join(fields)
