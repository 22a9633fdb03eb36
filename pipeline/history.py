"""What the last crawls recorded, kept in the work folder for ``beamtrawl explain`` (in a bucket too:
``work_dir: s3://…``): per crawl, when it ran, how it ended and its report lines (URL, stage, reason, kind).
Bounded: the last KEPT_CRAWLS crawls, each with at most MAX_LINES lines — a crawl that met a million broken
files keeps the first of them."""

from __future__ import annotations

import glob
import json
import logging
import os
import uuid
from collections.abc import Callable

log = logging.getLogger("beamtrawl")

#: Crawls whose lines are kept, the newest.
KEPT_CRAWLS = 5
#: Report lines kept of one crawl.
MAX_LINES = 100_000
_FOLDER = "history"


def keep(report: dict, work_dir: str) -> None:
    """Add this crawl's record and forget the oldest beyond KEPT_CRAWLS, in the work folder wherever it is (a
    bucket's through Beam's file systems, as the crawl's other files); a failure here costs explain its
    history, never the crawl."""
    folder = f"{work_dir.rstrip('/')}/{_FOLDER}" if "://" in work_dir else os.path.join(work_dir, _FOLDER)
    record = {"started_at": report.get("started_at", ""), "finished_at": report.get("finished_at", ""),
              "exit_code": report.get("exit_code"), "fatal": report.get("fatal", ""),
              "deletes_withheld": report.get("deletes_withheld", ""),
              "lines": report.get("problems", [])[:MAX_LINES], "deleted_urls": report.get("deleted_urls", [])[:MAX_LINES]}
    name = f"{record['finished_at'] or record['started_at']}-{uuid.uuid4().hex[:8]}.json".replace(":", "")
    try:
        if "://" in work_dir:
            _keep_in_store(folder, name, record)
            return
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name + ".tmp"), "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False)
        os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
        for old in sorted(glob.glob(os.path.join(folder, "*.json")))[:-KEPT_CRAWLS]:
            os.remove(old)
    except Exception as err:  # noqa: BLE001 - a store's client raises its own errors; the crawl is done
        log.debug("the crawl's history could not be kept in %s (%s)", folder, err)


def _keep_in_store(folder: str, name: str, record: dict) -> None:
    """The record as one object (written whole: no temporary name), the oldest beyond KEPT_CRAWLS removed."""
    files = file_systems()
    with files.create(f"{folder}/{name}") as out:
        out.write(json.dumps(record, ensure_ascii=False).encode("utf-8"))
    if old := sorted(m.path for m in files.match([f"{folder}/*.json"])[0].metadata_list)[:-KEPT_CRAWLS]:
        files.delete(old)


def file_systems():
    """Beam's file systems, set up with no pipeline's options when no pipeline ran in this process (the
    stores' own login chains: AWS_*, Google's)."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    if FileSystems._pipeline_options is None:
        FileSystems.set_options(PipelineOptions([]))
    return FileSystems


def use_options(beam_args: list[str]) -> None:
    """Beam's file systems set up with the command's Beam options (``--blob_service_endpoint``,
    ``--s3_endpoint_url``, …), so that the command reaches a work folder in a store as its workers will."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    FileSystems.set_options(PipelineOptions(list(beam_args)))


def _stored(work_dir: str) -> list[Callable]:
    """An opener of each kept record, the newest first."""
    if "://" not in work_dir:
        return [lambda path=path: open(path, "rb") for path in
                sorted(glob.glob(os.path.join(work_dir, _FOLDER, "*.json")), reverse=True)]
    files = file_systems()
    try:
        found = files.match([f"{work_dir.rstrip('/')}/{_FOLDER}/*.json"])[0].metadata_list
    except Exception:  # noqa: BLE001 - no such folder, or the store cannot be reached: no history
        return []
    return [lambda path=m.path: files.open(path) for m in sorted(found, key=lambda m: m.path, reverse=True)]


def crawls(work_dir: str) -> list[dict]:
    """The kept records, newest first."""
    found = []
    for opener in _stored(work_dir):
        try:
            with opener() as handle:
                found.append(json.loads(handle.read()))
        except Exception:  # noqa: BLE001, S112 - one unreadable record: the others are still told
            continue
    return found
