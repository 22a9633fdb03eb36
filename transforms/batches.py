"""Folder batches: what discovery found and what the index holds, one element per folder instead of one per
document, so that an unchanged file crosses no stage of its own (issue 27; docs/scaling.md).

A batch is ``(key, blob)``: the key is the document's folder (its URL up to the last ``/``), or the URL
itself for a source that crawls host by host (the web: its pages stay spread over workers one by one, as a
site's pages may all sit in one folder). Both sides of the freshness join compute the key from the URL alone,
so a document and its indexed version always meet, whichever listing found it.

The blob is the batch's records as columns, pickled and compressed (:func:`pack`): a field every record shares
is stored once (a folder's root, its listing, the fingerprint), a folder's URLs as the folder and the names. A
runner moves it as bytes: Beam's local runner holds a shuffle in the launching process, and there a batch is
one bytes object instead of a Python tuple and string per field and record, neither decoded nor encoded again
on its way through; its memory follows the bytes moved. The freshness join reads the columns
(:class:`Columns`) and makes records only of the documents that are not unchanged.
"""

from __future__ import annotations

import os
import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from operator import is_

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
    """``rows`` (records as tuples of their fields) as a batch's blob: columns (:func:`_packed`), pickled and
    compressed. Rows of
    different lengths (a third party's malformed records) are stored as they are, for the stage that judges
    each record to report it."""
    if len(set(map(len, rows))) != 1:
        return _compressed([tuple(row) for row in rows])
    return pack_columns(len(rows), list(zip(*rows)))


def pack_columns(n: int, columns: list) -> bytes:
    """``n`` records given as their columns (each a sequence of ``n`` values, or ``EMPTY_LISTS``) as a batch's
    blob, like :func:`pack`: a reader that has columns already (an index's snapshot) makes no row."""
    return _compressed((n, [column if column is EMPTY_LISTS else _packed(column) for column in columns]))


def _compressed(packed) -> bytes:
    """``packed`` pickled and compressed (zlib's fastest level: a third of the bytes, ids and names being most
    of them). The local runner's memory grows with the bytes a shuffle moves, which it holds and copies in
    the driver and in the workers: an unchanged re-crawl of 100,000 files peaked at 1,057 MiB uncompressed, at
    811–837 MiB compressed (docs/scaling.md)."""
    return zlib.compress(pickle.dumps(packed, pickle.HIGHEST_PROTOCOL), 1)


def _packed(column: tuple):
    """One column as :func:`pack` stores it: ``(value,)`` for the very same object in every row (equal is not
    enough: ``1 == True``, and two lists are two lists) or the same string, ``EMPTY_LISTS`` for an empty list
    in every row, ``(prefix, [rest …])`` for strings that share a prefix (a folder's URLs), else the values as
    a list."""
    first = column[0]
    strings = type(first) is str and all(map(is_, map(type, column), repeat(str)))  # in C, as below
    if column.count(first) == len(column):
        if strings or all(map(is_, column, repeat(first))):  # in C: a generator here cost 5 % of a listing
            return (first,)
        if first == [] and all(type(value) is list for value in column):
            return EMPTY_LISTS
    if strings:
        prefix = os.path.commonprefix(column)
        if len(prefix) >= _PREFIX:
            cut = len(prefix)
            return prefix, [value[cut:] for value in column]
    return list(column)


_PREFIX = 16  # a shared prefix at least this long is stored once (a URL's folder, which is most of it)
EMPTY_LISTS = 0  # a column whose every value is an empty list (a listing's outlinks, an index's groups)


class Columns:
    """A batch's records (:func:`pack`) by field, so that a stage that only compares a few fields of most
    records (the freshness join) makes no tuple per record: Python's cyclic collector walks every tuple alive,
    and a batch's records as tuples cost several times their unpickling."""

    def __init__(self, blobs: Iterable[bytes]):
        """The records of one or more batches' blobs, in order."""
        parts = [pickle.loads(zlib.decompress(blob)) for blob in blobs]
        self._ragged = [row for part in parts if type(part) is list for row in part]
        parts = [part for part in parts if type(part) is not list]
        if self._ragged:  # malformed records: kept as rows, all of them (see :meth:`regular`)
            self._ragged += [row for part in parts for row in _expanded(*part)]
            parts = []
        self.n = sum(n for n, _ in parts)
        self._parts = parts

    @property
    def regular(self) -> bool:
        """Are the records of equal length, so that :meth:`field` can be asked?"""
        return not self._ragged

    def field(self, k: int) -> list:
        """Field ``k`` of every record (read only: a value held by every record is one object in this list)."""
        if len(self._parts) == 1:
            n, columns = self._parts[0]
            return _whole(columns[k], n)
        values: list = []
        for n, columns in self._parts:
            values += _whole(columns[k], n)
        return values

    def row(self, i: int) -> tuple:
        """Record ``i`` as a tuple of its fields."""
        for n, columns in self._parts:
            if i < n:
                return tuple(_value(column, i) for column in columns)
            i -= n
        raise IndexError(i)

    def rows(self) -> list[tuple]:
        """Every record as a tuple of its fields."""
        if self._ragged:
            return self._ragged
        return [row for part in self._parts for row in _expanded(*part)]


def _value(column, i: int):
    if type(column) is list:
        return column[i]
    if column is EMPTY_LISTS:
        return []
    return column[0] + column[1][i] if len(column) == 2 else column[0]


def _whole(column, n: int) -> list:
    """A stored column as the list of its ``n`` values (an empty list is one list for all: read only)."""
    if type(column) is list:
        return column
    if column is EMPTY_LISTS:
        return [[]] * n
    if len(column) == 2:
        prefix = column[0]
        return [prefix + rest for rest in column[1]]
    return [column[0]] * n


def _expanded(n: int, columns: list) -> list[tuple]:
    """The rows of one packed batch, each with lists of its own."""
    return list(zip(*[[[] for _ in range(n)] if column is EMPTY_LISTS else _whole(column, n)
                      for column in columns]))


def rows(blob: bytes) -> list[tuple]:
    """The records of a batch's blob (:func:`pack`), as tuples of their fields."""
    return Columns([blob]).rows()


def by_folder(records: Iterable) -> Iterator[Batch]:
    """``records`` (entries or snapshot rows) as batches, one per key they hold among each MOST in a row: an
    index returns a folder's documents together, as they were written, and a split of many folders is never
    held whole (a batch of a key that comes again later is one of several, which the join brings together)."""
    batches: dict[str, list] = {}
    held = 0
    for record in records:
        key = batch_key(record.url)
        batch = batches.get(key)
        if batch is None:
            batch = batches[key] = []
        batch.append(record)
        held += 1
        if held >= MOST:
            yield from ((key, pack(batch)) for key, batch in batches.items())
            batches, held = {}, 0
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
