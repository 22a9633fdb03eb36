"""Folder batches: what discovery found and what the index holds, one element per folder instead of one per
document, so that an unchanged file crosses no stage of its own (issue 27; docs/scaling.md).

A batch is ``(key, blob)``: the key is the document's folder (its URL up to the last ``/``), or the URL
itself for a source that crawls host by host (the web: its pages stay spread over workers one by one, as a
site's pages may all sit in one folder). Both sides of the freshness join compute the key from the URL alone,
so a document and its indexed version always meet, whichever listing found it.

The blob is the batch's records as columns, pickled: one list per field, or the value once where every record
holds the very same object (a folder's root, its listing, the empty ETag). A runner moves it as bytes: Beam's
local runner holds a shuffle in the launching process, and there a batch is one bytes object instead of a
Python tuple and string per field and record (what made its memory grow with the tree), and it is neither
decoded nor encoded again on its way through.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat

from beamtrawl.transforms.sources import by_host

#: A batch's element type: keyed by a plain string, its records one bytes object (:func:`pack`), so a runner
#: in Java (Flink, Spark) shuffles it without decoding our records' schemas.
Batch = tuple[str, bytes]
URL = 1  # where the URL is in an Entry's and in a SnapshotEntry's fields
#: At most this many records in one batch (~1 MB): a folder of more is several batches of one key, which the
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


def pack(rows: list[tuple]) -> bytes:
    """``rows`` (records as plain tuples of their fields) as a batch's blob: columns, a field that holds the
    same object in every row stored once. Rows of different lengths (a third party's malformed records) are
    stored as they are, for the stage that judges each record to report it."""
    if len(set(map(len, rows))) != 1:
        return pickle.dumps(list(rows), pickle.HIGHEST_PROTOCOL)
    columns = []
    for column in zip(*rows):
        first = column[0]
        columns.append((first,) if column.count(first) == len(column) and _same(column, first) else list(column))
    return pickle.dumps((len(rows), columns), pickle.HIGHEST_PROTOCOL)


def _same(column: tuple, first) -> bool:
    """Is every value of ``column`` the very object ``first`` (equal is not enough: ``1 == True``, and two
    empty lists are two lists)?"""
    return all(value is first for value in column)


def rows(blob: bytes) -> list[tuple]:
    """The records of a batch's blob (:func:`pack`), as plain tuples of their fields."""
    packed = pickle.loads(blob)
    if type(packed) is list:
        return packed
    n, columns = packed
    return list(zip(*[column if type(column) is list else repeat(column[0], n) for column in columns]))


def by_folder(records: Iterable) -> Iterator[Batch]:
    """``records`` (entries or snapshot rows) as batches, one per key they hold."""
    batches: dict[str, list] = {}
    for record in records:
        key = batch_key(record.url)
        batch = batches.setdefault(key, [])
        batch.append(tuple(record))
        if len(batch) >= MOST:
            yield key, pack(batches.pop(key))
    for key, batch in batches.items():
        yield key, pack(batch)


def unpack(batch: Batch, kind: type) -> list:
    """The records of one batch as ``kind`` (a stage that needs them one by one: following symbolic links,
    the web)."""
    return [kind._make(fields) for fields in rows(batch[1])]


def keep(batch: Batch, wanted: Callable[[str], bool]) -> Iterator[Batch]:
    """``batch`` with only the records whose URL ``wanted`` accepts; nothing if none is left."""
    key, blob = batch
    records = rows(blob)
    kept = [r for r in records if wanted(r[URL])]
    if len(kept) == len(records):
        yield batch
    elif kept:
        yield key, pack(kept)
