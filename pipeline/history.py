"""What the last crawls recorded, kept in the work folder for ``beamtrawl explain``: per crawl, when it ran,
how it ended and its report lines (URL, stage, reason, kind). Bounded: the last KEPT_CRAWLS crawls, each
with at most MAX_LINES lines — a crawl that met a million broken files keeps the first of them."""

from __future__ import annotations

import glob
import json
import logging
import os
import uuid

log = logging.getLogger("beamtrawl")

#: Crawls whose lines are kept, the newest.
KEPT_CRAWLS = 5
#: Report lines kept of one crawl.
MAX_LINES = 100_000
_FOLDER = "history"


def keep(report: dict, work_dir: str) -> None:
    """Add this crawl's record and forget the oldest beyond KEPT_CRAWLS. A work folder on a bucket keeps none
    (explain then knows only the last report); a failure here costs explain its history, never the crawl."""
    if "://" in work_dir:
        return
    folder = os.path.join(work_dir, _FOLDER)
    record = {"started_at": report.get("started_at", ""), "finished_at": report.get("finished_at", ""),
              "exit_code": report.get("exit_code"), "fatal": report.get("fatal", ""),
              "deletes_withheld": report.get("deletes_withheld", ""),
              "lines": report.get("problems", [])[:MAX_LINES], "deleted_urls": report.get("deleted_urls", [])[:MAX_LINES]}
    try:
        os.makedirs(folder, exist_ok=True)
        name = f"{record['finished_at'] or record['started_at']}-{uuid.uuid4().hex[:8]}.json".replace(":", "")
        with open(os.path.join(folder, name + ".tmp"), "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False)
        os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
        for old in sorted(glob.glob(os.path.join(folder, "*.json")))[:-KEPT_CRAWLS]:
            os.remove(old)
    except OSError as err:
        log.debug("the crawl's history could not be kept in %s (%s)", folder, err)


def crawls(work_dir: str) -> list[dict]:
    """The kept records, newest first."""
    found = []
    for path in sorted(glob.glob(os.path.join(work_dir, _FOLDER, "*.json")), reverse=True):
        try:
            with open(path, encoding="utf-8") as handle:
                found.append(json.load(handle))
        except (OSError, ValueError):
            continue
    return found
