"""Folder batches: what discovery found and what the index holds, one element per folder instead of one per
document, so that an unchanged file crosses no stage of its own (issue 27; docs/scaling.md).

A batch is ``(key, [records])``: the key is the document's folder (its URL up to the last ``/``), or the URL
itself for a source that crawls host by host (the web: its pages stay spread over workers one by one, as a
site's pages may all sit in one folder). Both sides of the freshness join compute the key from the URL alone,
so a document and its indexed version always meet, whichever listing found it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from beamtrawl.transforms.sources import by_host

#: A batch's element type: keyed by a plain string and pickled, so a runner in Java (Flink, Spark) shuffles
#: it without decoding our records' schemas. Its records travel as plain tuples of their fields: a named tuple
#: is unpickled through its class, several times slower, and most records of a batch (unchanged files) are
#: only compared, never used whole.
Batch = tuple[str, Any]
URL = 1  # where the URL is in an Entry's and in a SnapshotEntry's fields
#: At most this many records in one batch (~2 MB): a folder of more is several batches of one key, which the
#: join brings together again (so one folder's records still meet in one worker: see docs/scaling.md).
MOST = 5_000

_BY_HOST: dict[str, bool] = {}


def batch_key(url: str) -> str:
    """The key of the batch ``url``'s document belongs to (see the module docstring)."""
    scheme = url[:url.find(":")]
    host_wise = _BY_HOST.get(scheme)
    if host_wise is None:
        host_wise = _BY_HOST[scheme] = by_host(url)
    return url if host_wise else url[:url.rfind("/")]


def by_folder(records: Iterable) -> Iterator[Batch]:
    """``records`` (entries or snapshot rows) as batches, one per key they hold."""
    batches: dict[str, list] = {}
    for record in records:
        key = batch_key(record.url)
        batch = batches.setdefault(key, [])
        batch.append(tuple(record))
        if len(batch) >= MOST:
            yield key, batches.pop(key)
    yield from batches.items()


def unpack(batch: Batch, kind: type) -> list:
    """The records of one batch as ``kind`` (a stage that needs them one by one: following symbolic links,
    the web)."""
    return [kind._make(fields) for fields in batch[1]]


def keep(batch: Batch, wanted: Callable[[str], bool]) -> Iterator[Batch]:
    """``batch`` with only the records whose URL ``wanted`` accepts; nothing if none is left."""
    key, records = batch
    kept = [r for r in records if wanted(r[URL])]
    if kept:
        yield key, kept
