"""The index as an open table: Delta Lake on Parquet, through delta-rs (``deltalake``) and pyarrow.

Delta Lake's transaction log gives what a crawl needs without any versioning of our own: a commit is
atomic, every version stays readable (time travel) until ``beamtrawl maintain`` removes it, and the
change data feed says per version which ids were inserted, updated and deleted (docs/table.md).

::

    driver   prepare ─► pin the current version (a lease file names it) ─► snapshot_splits: its files
    workers  read_snapshot: the freshness columns of those files (pyarrow, in parallel)
    workers  upsert / set_access: each batch → one Parquet file in the table's folder, NOT committed;
             its name goes on as an event of the bundle (a retried bundle's files are never named)
    driver   commit(staged): the named files in ONE transaction — added as they are when no id of
             them is in the table yet (a first crawl: nothing rewritten), else one MERGE by id that
             also applies the staged access changes
    driver   delete(ids): one MERGE … WHEN MATCHED DELETE transaction, after the commit and the guards
    driver   finish: the lease goes; files of this crawl that no version holds are removed

A crawl that fails commits nothing: readers keep the last good version. Workers write into the table's
own folder (a local path, ``s3://``, ``gs://``, ``az://`` or ``abfss://``: delta-rs and the workers' file
system reach the same store, :mod:`~beamtrawl.transforms.index.table_store`), so the table works on every
runner; on a cluster every worker must reach that folder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Annotated, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from beamtrawl.transforms.fields import OrEmpty, Path, Text, fail
from beamtrawl.transforms.index import semantic, table_search
from beamtrawl.transforms.index.base import RECORD_FIELDS, Hit, IndexTarget, IndexUnavailable, TargetSettings
from beamtrawl.transforms.index.query import Query
from beamtrawl.transforms.index.table_store import arrow_fs, delta_options, failures
from beamtrawl.transforms.records import AuxValue, IndexDoc, SnapshotEntry
from beamtrawl.transforms.urls import holds_login
from pydantic import AfterValidator

log = logging.getLogger("beamtrawl")
#: delta-rs logs its own warnings to stderr (each probe of an object store's credential chain, several lines
#: each) unless RUST_LOG says otherwise; what fails reaches the user as our one-line error instead.
os.environ.setdefault("RUST_LOG", "error")

#: Written to the table property ``beamtrawl.schema_version``; bumped when SCHEMA changes.
SCHEMA_VERSION = 1
SCHEMA_PROPERTY = "beamtrawl.schema_version"
#: The table's Arrow schema (docs/table.md describes every column).
SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),  # sha256 of the normalised URL
    pa.field("url", pa.string(), nullable=False),
    pa.field("root", pa.string()),  # the start URL it was found under
    pa.field("title", pa.string()),
    pa.field("content", pa.string()),
    pa.field("summary", pa.string()),
    pa.field("headlines", pa.list_(pa.string())),
    pa.field("metadata", pa.string()),
    pa.field("mimetype", pa.string()),
    pa.field("extension", pa.string()),
    pa.field("filename", pa.string()),
    pa.field("path", pa.string()),  # the folder, without scheme
    pa.field("size", pa.int64()),
    pa.field("mtime_ns", pa.int64()),  # exact, for freshness (Delta timestamps stop at microseconds)
    pa.field("last_modified", pa.timestamp("us", tz="UTC")),
    pa.field("groups", pa.list_(pa.string())),  # who may read it; empty: everyone
    pa.field("denied", pa.list_(pa.string())),  # who may not ("*": no one)
    pa.field("aux", pa.map_(pa.string(), pa.string())),  # auxiliary fields, name → value
    pa.field("preparation_error", pa.string()),
    pa.field("content_hash", pa.string()),
    pa.field("etag", pa.string()),
    pa.field("http_last_modified", pa.string()),
    pa.field("prep_fingerprint", pa.string()),
    pa.field("outlinks", pa.list_(pa.string())),
    pa.field("indexed_at", pa.timestamp("us", tz="UTC")),
    pa.field("crawl_id", pa.string()),  # the crawl that wrote this row (also in the commit's metadata)
    pa.field("furniture", pa.string()),  # page furniture: menus, sidebars, footers (IndexDoc.furniture)
    # issue 31: the passages' [start, stop) spans in ``content``, flat, and one float32 vector per passage, each
    # the model's length (Delta has no fixed-size array type: delta-rs stores a FixedSizeList as array<array>)
    pa.field("passages", pa.list_(pa.int32())),
    pa.field("vectors", pa.list_(pa.list_(pa.float32()))),
])
#: Columns SCHEMA gained after its version 1, with their Delta types: a crawl adds them to an older table (its
#: rows' values: null).
ADDED = {"furniture": "string", "passages": ("integer",), "vectors": (("float",),)}
ACCESS_SCHEMA = pa.schema([SCHEMA.field("id"), SCHEMA.field("groups"), SCHEMA.field("denied")])
_SNAPSHOT_COLUMNS = list(SnapshotEntry._fields)
#: Table properties a new table gets: the change data feed on, our schema version.
PROPERTIES = {"delta.enableChangeDataFeed": "true", SCHEMA_PROPERTY: str(SCHEMA_VERSION)}
SPLIT_ROWS = 50_000  # rows of the snapshot one worker reads
LEASES = "_beamtrawl/leases"  # one file per running crawl naming the version it reads (maintenance keeps it)
#: The configuration that fills the table (pipeline/owner.py) and the sources' state of the last clean crawl
#: (pipeline/unchanged.py), beside the leases: files of the table's folder that no version holds, which
#: delta-rs never reads nor vacuums (a name starting with "_"), and which go when the table's folder goes.
OWNER, STATE = "_beamtrawl/owner.json", "_beamtrawl/state.json"
LEASE_HOURS = 7 * 24  # a lease older than this is a crawl that died: maintenance ignores it (sooner on its machine)
DEFAULT_RETENTION_HOURS = 7 * 24  # versions `beamtrawl maintain` keeps (Delta's own default)
#: Table features we cannot read as plain Parquet files (the snapshot reads the files themselves).
_UNREADABLE_FEATURES = {"deletionVectors", "columnMapping"}
_BY_WORDS = ("read it with DuckDB (SELECT url, title FROM delta_scan('{uri}') WHERE content ILIKE '%word%'), Polars "
             "or Spark (docs/table.md), or crawl into the embedded index or OpenSearch")
_NOT_SEARCHABLE = ("{uri} is a Delta table, which beamtrawl searches by meaning only (--mode semantic or hybrid, "
                   "--like; with embeddings on): for keywords " + _BY_WORDS)
_NOT_SERVED = ("{uri} is a Delta table, which beamtrawl serve does not serve (no totals or facets without a text "
               "index; beamtrawl search --mode semantic searches it by meaning): " + _BY_WORDS)


def _timestamp(text: str) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _iso(value: datetime | None, timespec: str) -> str:
    """A timestamp column's value as the ISO 8601 text the documents carry ("" for none)."""
    return value.isoformat(timespec=timespec) if value else ""


def to_arrow(docs: Sequence[IndexDoc], crawl_id: str) -> pa.Table:
    """Index documents as rows of :data:`SCHEMA`."""
    rows = [{
        **{name: getattr(doc, name) for name in SCHEMA.names if name in IndexDoc._fields},
        "headlines": doc.headlines.split("\n") if doc.headlines else [],
        "last_modified": _timestamp(doc.last_modified), "indexed_at": _timestamp(doc.indexed_at),
        "groups": list(doc.groups), "denied": list(doc.denied), "outlinks": list(doc.outlinks),
        "aux": [(a.name, a.value) for a in doc.aux if a.store or a.index], "crawl_id": crawl_id,
        "passages": list(doc.passages), "vectors": _vector_rows(doc.passages, doc.vectors),
    } for doc in docs]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _vector_rows(passages, vectors: bytes) -> list | None:
    """A document's float16 passage vectors as float32 rows (None: none, or not one whole row per passage)."""
    import numpy as np

    count = len(passages) // 2
    if not count or not vectors or len(vectors) % (2 * count):
        return None
    return np.frombuffer(vectors, dtype=np.float16).reshape(count, -1).astype(np.float32).tolist()


def from_arrow(row: dict) -> IndexDoc:
    """A row of :data:`SCHEMA` (as a dict) as an index document again (auxiliary fields stored, searchable)."""
    values = {name: row[name] for name in IndexDoc._fields if name in row}
    values.update(
        headlines="\n".join(row["headlines"] or ()),
        last_modified=_iso(row["last_modified"], "milliseconds"), indexed_at=_iso(row["indexed_at"], "seconds"),
        aux=[AuxValue(name, value, True, True, False) for name, value in row["aux"] or ()],
        furniture=row.get("furniture") or "", passages=row.get("passages") or [],
        vectors=_vector_bytes(row.get("vectors")))
    return IndexDoc(**values)


def _vector_bytes(rows) -> bytes:
    """Float32 passage vectors read back as the float16 bytes a document carries (b"": none, or ragged)."""
    import numpy as np

    if not rows or len({len(row) for row in rows}) != 1:
        return b""
    return np.asarray(rows, dtype=np.float16).tobytes()


def _table_location(location: str) -> str:
    if "://" in location and not re.match(r"(file:///|(s3|s3a|gs|gcs|az|abfss?)://[^/\s])", location):
        raise fail(f"must be a path or a file://, s3://, gs:// or abfss:// URL with its bucket, got {location!r}")
    if holds_login(location):  # the table's URL is in the report and the logs: a key goes in storage_options
        raise fail("must not hold a user or password; put the login in storage_options")
    return location


class DeltaSettings(TargetSettings):
    """An open table (``kind: delta``; a section with ``table`` and no ``kind`` is one): docs/table.md."""

    kind: Literal["delta"] = "delta"
    """a Delta table"""
    table: Annotated[Path, AfterValidator(_table_location)]
    """the table: a folder (relative to the configuration file) or a file/s3/gs/az/abfss URL"""
    format: Literal["delta"] = "delta"
    """the open table format (Delta Lake through delta-rs; docs/table.md says why not Iceberg)"""
    storage_options: Annotated[dict[str, Text], OrEmpty,
                               AfterValidator(lambda options: tuple(sorted(options.items())))] = ()
    """delta-rs's object store options (any case; credentials as ``${ENV_VAR}``); not given: the environment
    the sources read (AWS_*, AZURE_STORAGE_CONNECTION_STRING, Google's chain)"""

    @property
    def label(self) -> str:
        return self.table

    def stem(self, base: str) -> str:
        return self.table.rstrip("/") if "://" not in self.table else os.path.join(base, "beamtrawl-table")


class DeltaIndex(IndexTarget):
    """A Delta table at ``uri``; ``storage_options`` go to delta-rs for object stores (credentials)."""

    Settings = DeltaSettings

    delete_batch = None  # every delete of a crawl in one transaction
    semantic = True  # searches by meaning (transforms/index/table_search.py), never by keywords alone

    @classmethod
    def from_config(cls, index_config: DeltaSettings) -> DeltaIndex:
        """The table an ``index: {table: ...}`` section names."""
        return cls(index_config.table, dict(index_config.storage_options))

    def __init__(self, uri: str, storage_options: dict | None = None):
        self.uri = uri.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.crawl_id = ""
        self.version: int | None = None  # the version this crawl reads (pinned by prepare)
        self._table = None
        self._fs: tuple[pafs.FileSystem, str] | None = None
        self._staged: list[str] = []

    def __getstate__(self):
        return {"uri": self.uri, "storage_options": self.storage_options, "crawl_id": self.crawl_id,
                "version": self.version}

    def __setstate__(self, state):
        self.__init__(state["uri"], state["storage_options"])
        self.crawl_id, self.version = state["crawl_id"], state["version"]

    # -- where the files are -------------------------------------------------------------------
    @property
    def fs(self) -> tuple[pafs.FileSystem, str]:
        """(pyarrow file system, the table's folder in it)."""
        if self._fs is None:
            self._fs = arrow_fs(self.uri, self.storage_options)
        return self._fs

    def _options(self) -> dict | None:
        """What delta-rs gets to reach the store (:mod:`~beamtrawl.transforms.index.table_store`)."""
        return (delta_options(self.uri, self.storage_options) or None) if "://" in self.uri else None

    def _path(self, name: str) -> str:
        return f"{self.fs[1]}/{name}"

    def _open(self, version: int | None = None):
        from deltalake import DeltaTable

        return DeltaTable(self.uri, version=version, storage_options=self._options())

    @property
    def table(self):
        """The table at its latest version (the driver's handle; refreshed by every commit)."""
        if self._table is None:
            self._table = self._open()
        return self._table

    def close(self) -> None:
        self._table = None

    def _where(self) -> str:
        return f"{self.uri}"

    # -- driver ------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the table (schema, change data feed, schema version) or check it; pin the version this
        crawl reads and write the lease that keeps it from ``beamtrawl maintain``."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        self._refuse_escapes()
        try:
            if not DeltaTable.is_deltatable(self.uri, storage_options=self._options()):
                self._refuse_inside_a_table()
                self._refuse_foreign_folder()
                DeltaTable.create(self.uri, SCHEMA, name="beamtrawl", configuration=PROPERTIES,
                                  storage_options=self._options(), raise_if_key_not_exists=False)
            self._table = None
            self._check_table(self.table)
            self._add_columns(self.table)  # after the check: someone else's table is left as it is
        except IndexUnavailable:
            raise
        except (DeltaError, *failures()) as err:
            raise IndexUnavailable(f"{self._where()}: cannot use the Delta table ({_short(err)})") from None
        self.version = self.table.version()
        self.crawl_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
        self._write_lease()

    def place_problem(self, create: bool) -> str:
        """A table in an object store: a probe file written and removed in its folder, as the workers will stage
        theirs, so a read-only login or a missing bucket is one line before any work. A local folder is made or
        refused by :meth:`prepare`."""
        if "://" not in self.uri or self.uri.startswith("file://"):
            return ""
        fs, _ = self.fs
        probe = self._path(f"_beamtrawl-probe-{uuid.uuid4().hex[:8]}")  # pyarrow leaves its folder as a marker
        try:
            with fs.open_output_stream(probe) as out:
                out.write(b"beamtrawl")
            fs.delete_file(probe)
        except failures() as err:
            return f"its folder cannot be written ({_short(err)})"
        return ""

    def _refuse_foreign_folder(self) -> None:
        """A folder with files that is not a Delta table is someone else's: left as it is."""
        fs, root = self.fs
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.File:
            raise IndexUnavailable(f"{self._where()}: a file, not a Delta table; left as it is")
        if info.type == pafs.FileType.Directory and fs.get_file_info(pafs.FileSelector(root)):
            raise IndexUnavailable(f"{self._where()}: a folder with files that is not a Delta table; left as it "
                                   f"is (name an empty or new folder)")

    def _refuse_escapes(self) -> None:
        """delta-rs reads a local path as a URL: ``%20`` as a space and ``\\`` as ``/``, so a table made at
        such a path is written where it is not read again (the export failed and left its log behind)."""
        local = self.uri.removeprefix("file://")
        if "://" not in local and ("%" in local or "\\" in local):
            raise IndexUnavailable(f"{self._where()}: delta-rs reads '%' and '\\' in a local path as URL escapes, "
                                   f"so it cannot keep a table there; choose a folder name without them")

    def _refuse_inside_a_table(self) -> None:
        """A folder inside another Delta table is refused: that table's vacuum would remove its files."""
        fs, root = self.fs
        parent = root.rstrip("/").rpartition("/")[0]
        while parent and parent not in ("/", root):
            if fs.get_file_info(f"{parent}/_delta_log").type == pafs.FileType.Directory:
                raise IndexUnavailable(f"{self._where()}: inside the Delta table {parent}, whose maintenance would "
                                       f"remove it; name a folder outside it")
            parent = parent.rpartition("/")[0]

    def _add_columns(self, table) -> None:
        """The ADDED columns an older table lacks, in a transaction of their own (the table's files stay)."""
        from deltalake.schema import ArrayType, Field, PrimitiveType

        def delta_type(kind):  # a tuple: an array of its one element's type
            return ArrayType(delta_type(kind[0]), contains_null=True) if isinstance(kind, tuple) else PrimitiveType(kind)

        have = {field.name for field in table.schema().fields}
        missing = [name for name in ADDED if name not in have]
        if missing:
            table.alter.add_columns([Field(name, delta_type(ADDED[name]), nullable=True) for name in missing])
            self._table = None

    def _check_table(self, table) -> None:
        version = table.metadata().configuration.get(SCHEMA_PROPERTY)
        if version != str(SCHEMA_VERSION):
            what = f"schema version {version}" if version else "no beamtrawl schema version"
            raise IndexUnavailable(f"{self._where()}: a Delta table with {what}, this beamtrawl writes version "
                                   f"{SCHEMA_VERSION}; crawl into a new table (or `beamtrawl export` the old index)")
        missing = [name for name in SCHEMA.names
                   if name not in {field.name for field in table.schema().fields} and name not in ADDED]
        if missing:
            raise IndexUnavailable(f"{self._where()}: a Delta table without the column{'s' * (len(missing) > 1)} "
                                   f"{', '.join(missing[:5])} of schema version {SCHEMA_VERSION}; left as it is, "
                                   f"crawl into a new table")
        features = set(table.protocol().reader_features or ()) & _UNREADABLE_FEATURES
        if features:
            raise IndexUnavailable(f"{self._where()}: the table uses {', '.join(sorted(features))}, which beamtrawl "
                                   f"does not write or read; crawl into a new table")

    def _write_lease(self) -> None:
        fs, _ = self.fs
        fs.create_dir(self._path(LEASES), recursive=True)
        with fs.open_output_stream(self._path(f"{LEASES}/{self.crawl_id}.json")) as out:
            out.write(json.dumps({"version": self.version, "crawl_id": self.crawl_id, "started": time.time(),
                                  "host": socket.gethostname(), "pid": os.getpid()}).encode())

    def check(self) -> None:
        """The table must exist and be one this beamtrawl writes (searching it is refused by :meth:`search`)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        try:
            if not DeltaTable.is_deltatable(self.uri, storage_options=self._options()):
                raise IndexUnavailable(f"{self._where()}: no index here yet (no Delta table); run beamtrawl crawl "
                                       f"first")
            self._check_table(self.table)
        except (DeltaError, *failures()) as err:
            raise IndexUnavailable(f"{self._where()}: cannot read the Delta table ({_short(err)})") from None

    def read_owner(self) -> dict | None:
        """Never creates anything: a folder without the file (a new table, or none yet) has no owner."""
        return self._read_side(OWNER)

    def write_owner(self, owner: dict) -> None:
        self._write_side(OWNER, owner)

    def read_state(self) -> dict | None:
        """The state holds for the version the crawl that stored it left: any commit since (another writer's,
        a restore, ``beamtrawl maintain``) makes the next crawl run its pipeline."""
        stored = self._read_side(STATE)
        if not stored or stored.get("version") != self.table.version():
            return None
        return stored.get("state")

    def write_state(self, state: dict | None) -> None:
        if state is None:
            fs, _ = self.fs
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(self._path(STATE))
            return
        self._write_side(STATE, {"version": self.table.version(), "state": state})

    def _read_side(self, name: str) -> dict | None:
        """A JSON file of the table's folder, or None if it is not there (or cannot be read: a damaged one
        is written again by the crawl, and prepare() says what is wrong with a folder it cannot use)."""
        fs, _ = self.fs
        try:
            with fs.open_input_stream(self._path(name)) as handle:
                found = json.loads(handle.read())
        except (*failures(), ValueError):
            return None
        return found if isinstance(found, dict) else None

    def _write_side(self, name: str, value: dict) -> None:
        """Written whole under another name, then moved: a reader never meets half a file. An object store
        writes an object whole anyway, and some cannot move one (Azure Blob without a hierarchical namespace)."""
        fs, _ = self.fs
        fs.create_dir(self._path(name).rpartition("/")[0], recursive=True)
        local = isinstance(fs, pafs.LocalFileSystem)
        temporary = self._path(f"{name}.{uuid.uuid4().hex}.tmp") if local else self._path(name)
        with fs.open_output_stream(temporary) as out:
            out.write(json.dumps(value, sort_keys=True).encode())
        if local:
            fs.move(temporary, self._path(name))

    def snapshot_splits(self) -> list[tuple[int, list[str]]]:
        """The files of the pinned version, in groups of about SPLIT_ROWS rows."""
        actions = _add_actions(self._open(self.version))
        splits, files, rows = [], [], 0
        for path, records in zip(actions["path"], actions["num_records"], strict=True):
            files.append(path)
            rows += records or 0
            if rows >= SPLIT_ROWS:
                splits.append((self.version, files))
                files, rows = [], 0
        return [*splits, (self.version, files)] if files else splits

    def commit(self, staged: Sequence[str]) -> None:
        """Make the upserts visible: the staged files of the bundles that succeeded, in one transaction —
        added as they are when no id of them is in the table yet, else one MERGE by id (which also applies
        the staged access changes)."""
        documents = [self._path(name) for name in staged if name.startswith("part-")]
        access = [self._path(name) for name in staged if name.startswith("access-")]
        fs = self.fs[0]
        ids = ds.dataset(documents, filesystem=fs, schema=SCHEMA).to_table(columns=["id"])["id"].combine_chunks()
        if len(ids) != len(pc.unique(ids)):  # a runner that handed on a retried bundle's output too
            raise IndexUnavailable(f"{self._where()}: the staged files hold a document twice; nothing committed")
        self.table.update_incremental()  # what crawls that ran beside this one committed since it pinned its version
        table = self._dataset()
        present = _ids_in(table, ids)
        changes = ds.dataset(access, filesystem=fs, schema=ACCESS_SCHEMA).to_table()
        # an access change applies to a document in the table and not staged in full (which carries its access)
        changes = changes.filter(pc.and_(pc.is_in(changes["id"], value_set=_ids_in(table, changes["id"])),
                                         pc.invert(pc.is_in(changes["id"], value_set=ids))))
        if changes.num_rows or len(present):  # rows are replaced: delta-rs rewrites the files holding them
            self._merge(_merge_source(documents, changes, fs), "upsert", lambda m: m
                        .when_matched_update_all(predicate=f"s.{_KIND} = 'document'", except_cols=[_KIND])
                        .when_matched_update({"groups": "s.groups", "denied": "s.denied"},
                                             predicate=f"s.{_KIND} = 'access'")
                        .when_not_matched_insert_all(predicate=f"s.{_KIND} = 'document'", except_cols=[_KIND]))
        elif documents:
            self._append(documents)

    def _append(self, paths: list[str]) -> None:
        """Commit the staged files themselves: nothing is rewritten."""
        from deltalake.transaction import AddAction

        fs, root = self.fs
        actions = []
        for path, info in zip(paths, fs.get_file_info(paths), strict=True):
            rows = pq.read_metadata(path, filesystem=fs).num_rows
            written = info.mtime.timestamp() if info.mtime else time.time()  # fsspec's Azure gives none
            actions.append(AddAction(path[len(root) + 1:], info.size, {}, int(written * 1000), True,
                                     json.dumps({"numRecords": rows})))
        self.table.create_write_transaction(actions, "append", SCHEMA,
                                            commit_properties=self._commit_properties("upsert"))
        self.table.update_incremental()

    def _merge(self, source: pa.RecordBatchReader, operation: str, clauses) -> None:
        from deltalake import WriterProperties

        merger = self.table.merge(source, "t.id = s.id", source_alias="s", target_alias="t",
                                  writer_properties=WriterProperties(compression="ZSTD"),
                                  commit_properties=self._commit_properties(operation))
        clauses(merger).execute()
        self.table.update_incremental()

    def _commit_properties(self, operation: str):
        from deltalake import CommitProperties

        return CommitProperties(custom_metadata={"beamtrawl.crawl_id": self.crawl_id,
                                                 "beamtrawl.operation": operation})

    def delete(self, ids: Sequence[str]) -> None:
        """Driver: one transaction removing ``ids`` (after :meth:`commit`)."""
        if ids:
            source = pa.table({"id": pa.array(list(ids), pa.string())})
            self._merge(pa.RecordBatchReader.from_batches(source.schema, source.to_batches()), "delete",
                        lambda m: m.when_matched_delete())

    def finish(self, succeeded: bool) -> None:
        """Remove this crawl's lease and the files it staged that no version holds (retried bundles',
        a failed crawl's, those a MERGE copied)."""
        if not self.crawl_id:
            return
        fs, root = self.fs
        with contextlib.suppress(*failures()):
            fs.delete_file(self._path(f"{LEASES}/{self.crawl_id}.json"))
        try:
            held = set(_files(self._open()))
            for info in fs.get_file_info(pafs.FileSelector(root)):
                name = info.base_name
                if self.crawl_id in name and name.startswith(("part-", "access-")) and name not in held:
                    fs.delete_file(info.path)
        except Exception as err:  # noqa: BLE001 - what is left is never read; `beamtrawl maintain` removes it
            log.warning("%s: could not remove the files this crawl left uncommitted (%s)", self._where(), _short(err))

    # -- maintenance and export (docs/table.md) -----------------------------------------------
    def leases(self) -> dict[str, tuple[int, float]]:
        """{crawl id: (the version it reads, when it began)} of the crawls running now (leases younger than LEASE_HOURS)."""
        fs, _ = self.fs
        found = {}
        for info in fs.get_file_info(pafs.FileSelector(self._path(LEASES), allow_not_found=True)):
            with contextlib.suppress(*failures(), ValueError, KeyError), fs.open_input_stream(info.path) as handle:
                lease = json.loads(handle.read())
                if _ended(lease):
                    fs.delete_file(info.path)
                elif time.time() - lease["started"] < LEASE_HOURS * 3600:
                    found[lease["crawl_id"]] = (lease["version"], lease["started"])
        return found

    def maintain(self, retention_hours: float = DEFAULT_RETENTION_HOURS) -> dict:
        """Compact small files, then remove the files no version younger than ``retention_hours`` needs.
        A running crawl's version is kept whatever its age, and so is every file written since it began
        (the ones it staged but has not committed)."""
        from deltalake.exceptions import DeltaError

        try:
            return self._maintain(retention_hours)
        except (DeltaError, *failures()) as err:
            raise IndexUnavailable(f"{self._where()}: cannot maintain the Delta table ({_short(err)})") from None

    def _maintain(self, retention_hours: float) -> dict:
        from deltalake import WriterProperties

        self._check_table(self.table)
        leases = self.leases()
        compacted = self.table.optimize.compact(writer_properties=WriterProperties(compression="ZSTD"),
                                                commit_properties=self._commit_properties("compact"))
        self.table.update_incremental()
        if leases:
            oldest = min(started for _version, started in leases.values())
            retention_hours = max(retention_hours, (time.time() - oldest) / 3600 + 1)
        removed = self.table.vacuum(retention_hours=int(retention_hours + 0.999), dry_run=False, full=True,
                                    enforce_retention_duration=False,  # full: files never committed go too
                                    keep_versions=sorted({version for version, _started in leases.values()}),
                                    commit_properties=self._commit_properties("vacuum"))
        return {"version": self.table.version(), "files_compacted": compacted["numFilesRemoved"],
                "files_written": compacted["numFilesAdded"], "files_removed": len(removed),
                "retention_hours": int(retention_hours + 0.999),
                "versions_kept_for_crawls": sorted({v for v, _s in leases.values()})}

    def write_all(self, docs: Iterator[IndexDoc], batch: int = 1000) -> int:
        """A new table holding ``docs`` (``beamtrawl export``), written in one transaction after its creation;
        refused where a table or other files are."""
        from deltalake.exceptions import DeltaError

        failed: list[BaseException] = []  # the source's own error, raised as it is (failures() holds RuntimeError)
        try:
            return self._write_all(docs, batch, failed)
        except IndexUnavailable:
            raise
        except (DeltaError, *failures()) as err:
            if failed and err is failed[0]:
                raise
            raise IndexUnavailable(f"{self._where()}: cannot write the Delta table ({_short(err)})") from None

    def _write_all(self, docs: Iterator[IndexDoc], batch: int, failed: list[BaseException]) -> int:
        from deltalake import DeltaTable, write_deltalake

        self._refuse_escapes()
        if DeltaTable.is_deltatable(self.uri, storage_options=self._options()):
            raise IndexUnavailable(f"{self._where()}: a Delta table is there already; export into a new folder")
        self._refuse_inside_a_table()
        self._refuse_foreign_folder()
        self.crawl_id = f"export-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
        written = [0]

        def batches():
            chunk = []
            for doc in _noting(docs, failed):
                chunk.append(doc)
                if len(chunk) == batch:
                    written[0] += len(chunk)
                    yield from to_arrow(chunk, self.crawl_id).to_batches()
                    chunk = []
            written[0] += len(chunk)
            yield from to_arrow(chunk, self.crawl_id).to_batches()

        fs, root = self.fs
        existed = fs.get_file_info(root).type == pafs.FileType.Directory  # empty: checked above
        try:  # from the table's creation on: a failure leaves nothing that a second export would refuse
            table = DeltaTable.create(self.uri, SCHEMA, name="beamtrawl", configuration=PROPERTIES,
                                      storage_options=self._options(), raise_if_key_not_exists=False)
            write_deltalake(table, pa.RecordBatchReader.from_batches(SCHEMA, batches()), mode="append",
                            commit_properties=self._commit_properties("export"))
        except BaseException:  # the table could not be made, or the source failed midway
            with contextlib.suppress(*failures()):
                fs.delete_dir_contents(root) if existed else fs.delete_dir(root)
            if failed:  # the source's own error, not delta-rs's wrapping of it
                raise failed[0] from None
            raise
        return written[0]

    # -- workers -----------------------------------------------------------------------------
    def read_snapshot(self, split: tuple[int, list[str]]) -> Iterator[SnapshotEntry]:
        _version, names = split
        fs = self.fs[0]
        for name in names:
            table = pq.read_table(self._path(name), columns=_SNAPSHOT_COLUMNS, filesystem=fs)
            for row in table.to_pylist():
                yield SnapshotEntry(**{k: row[k] if row[k] is not None else _MISSING.get(k, "")
                                       for k in _SNAPSHOT_COLUMNS})

    def _stage(self, prefix: str, table: pa.Table) -> None:
        name = f"{prefix}-{self.crawl_id}-{uuid.uuid4().hex}.zstd.parquet"
        pq.write_table(table, self._path(name), filesystem=self.fs[0], compression="zstd")
        self._staged.append(name)

    def upsert(self, docs: Sequence[IndexDoc]) -> list[tuple[str, str]]:
        if docs:
            self._stage("part", to_arrow(docs, self.crawl_id))
        return []

    def set_access(self, changes: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        if changes:
            self._stage("access", pa.Table.from_pylist(
                [{"id": i, "groups": list(groups), "denied": list(denied)} for i, groups, denied in changes],
                schema=ACCESS_SCHEMA))

    def take_staged(self) -> list[str]:
        staged, self._staged = self._staged, []
        return staged

    # -- reading -----------------------------------------------------------------------------
    def search(self, query: Query, limit: int) -> list[Hit]:
        """By meaning only (``--mode semantic``, ``hybrid``, ``--like``: :mod:`.table_search`); keywords alone are
        refused: the table has no text index."""
        from deltalake.exceptions import DeltaError

        if query.mode not in (semantic.SEMANTIC, semantic.HYBRID):
            raise IndexUnavailable(_NOT_SEARCHABLE.format(uri=self.uri))
        try:
            return table_search.search(self._dataset(), query, limit)
        except (DeltaError, *failures()) as err:
            raise IndexUnavailable(f"{self._where()}: cannot search the Delta table ({_short(err)})") from None

    def pages_unavailable(self) -> str:
        return _NOT_SERVED.format(uri=self.uri)

    def count(self) -> int:
        try:
            return self.table.count()
        except Exception:  # noqa: BLE001 - no table yet
            return 0

    def documents(self) -> Iterator[IndexDoc]:
        """Every document of the current version. The files are listed now and read with pyarrow alone, so
        the iterator may feed a write of delta-rs (``export``) without calling into delta-rs again."""
        return (from_arrow(row) for batch in self._dataset().to_batches() for row in batch.to_pylist())

    def record(self, doc_id: str) -> dict | None:
        """The id column of each file of the current version is read, then the one row that matches (never a
        scan filter: see :func:`_ids_in`)."""
        from deltalake.exceptions import DeltaError

        try:
            for fragment in self._dataset().get_fragments():
                at = pc.index(fragment.to_table(schema=SCHEMA, columns=["id"])["id"], doc_id).as_py()
                if at >= 0:
                    row = fragment.to_table(schema=SCHEMA, columns=list(RECORD_FIELDS)).slice(at, 1).to_pylist()[0]
                    return _record(row)
        except (DeltaError, *failures()) as err:
            raise IndexUnavailable(f"{self._where()}: cannot read the Delta table ({_short(err)})") from None
        return None

    def _dataset(self) -> ds.Dataset:
        """The files of the current version as a pyarrow dataset of our own (delta-rs's ``to_pyarrow_dataset``
        turns the statistics of the files it writes into string_view guarantees no filter can compare)."""
        return ds.dataset([self._path(name) for name in _files(self.table)], filesystem=self.fs[0], schema=SCHEMA)


def _record(row: dict) -> dict:
    """A row of the record's columns as :meth:`IndexTarget.record` gives it on every target."""
    return {**row, "groups": list(row["groups"] or ()), "denied": list(row["denied"] or ()),
            "last_modified": _iso(row["last_modified"], "milliseconds"), "indexed_at": _iso(row["indexed_at"], "seconds"),
            **{name: row[name] if row[name] is not None else _MISSING.get(name, "") for name in
               ("root", "title", "mimetype", "size", "mtime_ns", "preparation_error", "content_hash",
                "prep_fingerprint")}}


def _noting(items: Iterator, failed: list) -> Iterator:
    """``items``, noting in ``failed`` the error that ends them (delta-rs, which reads them, wraps it)."""
    try:
        yield from items
    except Exception as err:
        failed.append(err)
        raise


def _ids_in(table: ds.Dataset, ids) -> pa.Array:
    """Those of ``ids`` the table holds (its id column only is read)."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    # filtered after reading, not by a scan filter: pyarrow prunes row groups by their statistics, which
    # the files delta-rs writes (a MERGE's) store as string_view, and it cannot compare those with strings
    column = table.to_table(columns=["id"])["id"]
    return column.filter(pc.is_in(column, value_set=ids)).combine_chunks()


#: The MERGE source's column saying what a row is: a staged "document" or an "access" change.
_KIND = "_beamtrawl_kind"
_SOURCE_SCHEMA = pa.schema([*(f.with_nullable(True) for f in SCHEMA), pa.field(_KIND, pa.string())])


def _merge_source(documents: list[str], changes: pa.Table, fs) -> pa.RecordBatchReader:
    """The staged documents and the access changes as one stream (pyarrow only: delta-rs reads it while it
    merges)."""
    def batches():
        for batch in ds.dataset(documents, filesystem=fs, schema=SCHEMA).to_batches():
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(["document"] * batch.num_rows)],
                                             schema=_SOURCE_SCHEMA)
        columns = [changes[f.name] if f.name in ACCESS_SCHEMA.names else pa.nulls(len(changes), f.type)
                   for f in SCHEMA]
        yield from pa.Table.from_arrays([*columns, pa.array(["access"] * len(changes), pa.string())],
                                        schema=_SOURCE_SCHEMA).to_batches()
    return pa.RecordBatchReader.from_batches(_SOURCE_SCHEMA, batches())


def _ended(lease: dict) -> bool:
    """Whether a lease's crawl is known to have ended without removing it (killed): it ran on this machine
    and its process is gone. A lease from another machine lives until LEASE_HOURS."""
    if lease.get("host") != socket.gethostname() or not lease.get("pid"):
        return False
    try:
        os.kill(lease["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


def _add_actions(table) -> dict[str, list]:
    """The data files of a table version: {"path": [...], "num_records": [...], …}."""
    return pa.table(table.get_add_actions(flatten=True)).to_pydict()


def _files(table) -> list[str]:
    return _add_actions(table)["path"]


_MISSING = {"size": 0, "mtime_ns": 0, "groups": [], "outlinks": [], "denied": []}


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # delta-rs colours its chained errors' arrows (↳)


#: Where delta-rs appends a backtrace to its message: frames "0: <unknown>", "1: deltalake::…"
_BACKTRACE = re.compile(r"\s0: ")


def _short(err: Exception) -> str:
    """An error of delta-rs or pyarrow on one line, without its terminal colours and backtrace, and a log
    that cannot be decoded said as such (delta-rs: "Kernel error: Json error: … 0: <unknown> …")."""
    text = re.sub(r"\?\S*", "", _COLOUR.sub("", str(err)).replace("↳", ":"))  # a query may hold a signature
    text = _BACKTRACE.split(text, maxsplit=1)[0]
    text = " ".join(text.split()).replace(" :", ":")
    if "Json error" in text:
        text = "its log cannot be read, a commit in _delta_log is damaged or not a Delta log: " + text.split(
            "Json error:", 1)[-1].strip()
    return text[:300] or type(err).__name__
