"""OpenSearch as an index target, through opensearch-py.

* The searchable name is an **alias**; documents live in a physical index named after the mapping
  (``<name>-bt-<hash of mapping and analysis>``). A crawl writes into the physical index the current
  configuration asks for; when that differs from the one the alias points to (the analyzer changed),
  the crawl builds the new one from scratch and the alias is swapped only when the crawl succeeded,
  so searchers never see a half-built index (regain's temp/new/index folders, the OpenSearch way).
* The **snapshot** is read with a point in time, split by partition index and ranges of document
  numbers for parallel readers, each range read with ``search_after`` in index order (``_doc``), two
  ranges at a time, and made into the freshness join's folder batches from the answer's columns; the
  driver opens it and always releases it.
* **Upserts** go through ``helpers.streaming_bulk`` (the only helper that retries documents rejected
  with 429) in requests of at most 10 MiB; the transport retries 502/503/504 and timeouts. Ids are
  hashes of URLs, so a retried batch overwrites instead of duplicating. What still fails is returned
  to the caller for the report.
* **Auxiliary fields** go under ``aux.<name>`` (keyword: exact values), ``aux_text.<name>`` (text,
  standard analyzer: tokenized fields) and ``aux_stored.<name>`` (not indexed: what hits return),
  by each field's index/tokenize/store flags.
* **Text** (title, content, headlines, metadata, file name, URL, page furniture) is analysed by :func:`analysis` to
  give the words the embedded index gives, and a search is built from the parsed query
  (``_clause_query``, ``_term_query``: ``multi_match`` phrase queries), never handed to a query
  parser, so one query finds the same documents on both targets (docs/search.md). ``name_keys``
  holds what an exact-name query equals (query.name_keys), for ``_exact_name_boost``.
* **Access groups** are a filter of every search (``_visible``): public documents (no ``groups``)
  or those sharing a group with the searcher, minus those whose ``denied`` holds one of the
  searcher's groups or EVERYONE. It sits in the query itself, so hits, highlights and
  totals never include a document outside the searcher's groups.
* **Scores** must not depend on documents a searcher may not see, but BM25 weighs a word by the
  statistics of the indices searched. So each access partition (``access_key``: documents seen by the
  same searchers) lives in an index of its own: public documents in the physical index itself, every
  other partition in ``<physical>-<hash of its key>``, all behind the alias. A search first asks which
  partitions hold a document the searcher may see (``_visible_partitions``), then searches exactly
  those with ``dfs_query_then_fetch``, which computes the statistics over all of them: scores equal
  those of one index holding only the visible documents. A document whose groups change moves to its
  new partition (``upsert`` deletes the copy in the old one). Each partition is one shard: a corpus with
  thousands of distinct group sets needs a node allowing that many shards.
* **Meaning** (semantic and hybrid search, more like this): passages' vectors as nested ``knn_vector`` rows
  (:mod:`.opensearch_vectors`, needs the k-NN plugin); a k-NN query over the visible partitions with the access
  filter inside it ranks by meaning, the keyword ranking is the search above, and both are fused as the
  embedded index fuses them (:mod:`.semantic`); the page, its total and facets are those of the fused documents.
  Three requests (``_meaning_page``): the visible partitions, both rankings in one msearch, the page.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from operator import itemgetter
from types import SimpleNamespace
from typing import Annotated, Any, Literal, NamedTuple

import orjson
from beamtrawl.transforms import batches, collector
from beamtrawl.transforms.enrich.auxfields import tokens
from beamtrawl.transforms.fields import ExistingFile, Flag, Seconds, Text, fail, matching
from beamtrawl.transforms.index import opensearch_vectors as knn
from beamtrawl.transforms.index import semantic
from beamtrawl.transforms.index.base import (
    ACCESS_FIELDS,
    DATE_FACET,
    FACET_FIELDS,
    MARK_OFF,
    MARK_ON,
    MAX_LOCATIONS,
    NEWEST,
    RECORD_FIELDS,
    RELEVANCE,
    Hit,
    Indexed,
    IndexTarget,
    IndexUnavailable,
    Page,
    Rejected,
    Stored,
    TargetSettings,
    access_key,
    date_buckets,
    render_snippet,
)
from beamtrawl.transforms.index.query import (
    CHANGE_LOG_NAMES,
    CHANGE_LOG_WEIGHT,
    EXACT_NAME_BOOST,
    FURNITURE_WEIGHT,
    RANGE_COLUMNS,
    RANGE_FIELDS,
    Query,
    Term,
    name_keys,
    range_of,
    words,
)
from beamtrawl.transforms.index.sqlite import PASSAGE_CHARS
from beamtrawl.transforms.records import EVERYONE, AuxValue, IndexDoc, SnapshotEntry
from beamtrawl.transforms.values import NodeOptions
from opensearchpy import JSONSerializer, OpenSearch, helpers
from opensearchpy.exceptions import NotFoundError, OpenSearchException, SerializationError, TransportError
from pydantic import AfterValidator, Field

IndexName = matching(r"[a-z0-9][a-z0-9_.-]*", "must be lower case letters, digits, '_', '.' or '-', got {value!r}")

SLICE_DOCS = 50_000  # documents per snapshot slice
PAGE = 10_000  # the most one search returns (index.max_result_window)
READERS = 2  # ranges of a snapshot split read at once (a 2-core node serves two searches at once)
MAX_REQUEST_BYTES = 10 * 1024 * 1024
PIT_KEEP_ALIVE = "30m"
_SNAPSHOT_FIELDS = list(SnapshotEntry._fields)
_MISSING = {"size": 0, "mtime_ns": 0, "groups": [], "outlinks": [], "denied": [], "passages": []}
_SNAPSHOT_DEFAULTS = [(f, _MISSING.get(f, "")) for f in _SNAPSHOT_FIELDS]
_SNAPSHOT_GETTER = itemgetter(*_SNAPSHOT_FIELDS)
_LIST_FIELDS = [_SNAPSHOT_FIELDS.index(f) for f in ("groups", "outlinks", "denied")]
#: A snapshot page that misses a shard fails instead of leaving documents out. (``filter_path``, which halves the
#: answer the client parses, cost the node more than the client saved.)
_SNAPSHOT_ANSWER = {"allow_partial_search_results": "false"}
_PUBLIC = access_key(object())  # the key of a document without groups
#: Bumped when the layout of the physical indices changes, so a crawl rebuilds them (see ``physical``);
#: a change of ACCESS_FIELDS does the same.
_LAYOUT = ["partitions-by-access-1", *ACCESS_FIELDS]
# page furniture (query.FURNITURE_WEIGHT) is searched, never highlighted (``_HIGHLIGHT``)
_SEARCH_FIELDS = ["title^10", "headlines^4", "filename^3", "metadata^2", "content", "location",
                  f"furniture^{FURNITURE_WEIGHT}"]
TEXT_ANALYZER = "beamtrawl_text"
# A phrase whose last word is a prefix expands to at most this many words per field: seven fields' worth stays
# under OpenSearch's indices.query.bool.max_clause_count (1,024), which the DFS statistics pass meets. A
# prefix of one word has no bound: it is a prefix query, which matches without expanding into clauses.
MAX_PREFIX_WORDS = 100
# Each language's stemmer; English uses Porter's, as the embedded index (FTS5's porter tokenizer) does.
_STEMMERS = {"english": {"type": "porter_stem"}, "german": {"type": "stemmer", "language": "light_german"},
             "french": {"type": "stemmer", "language": "light_french"},
             "italian": {"type": "stemmer", "language": "light_italian"}, "standard": None}


def analysis(analyzer: str) -> dict:
    """The text analysis of every searchable field, made to find the words the embedded index finds
    (FTS5 ``porter unicode61 remove_diacritics 2``): split at everything but letters and digits (so
    ``annual_numbat_summary`` and ``report.final.txt`` are several words), lower case, accents
    removed, no stop words, then the language's stemmer (English: Porter, after removing accents as
    FTS5 does; other languages stem before, their stemmers know their accents)."""
    stemmer = _STEMMERS[analyzer]
    steps = ["lowercase", "asciifolding"]
    if stemmer is not None:
        steps.insert(1 if analyzer != "english" else 2, "beamtrawl_stem")
    return {"tokenizer": {"beamtrawl_words": {"type": "pattern", "pattern": r"[^\p{L}\p{N}]+"}},
            "filter": {"beamtrawl_stem": stemmer} if stemmer else {},
            "analyzer": {TEXT_ANALYZER: {"type": "custom", "tokenizer": "beamtrawl_words", "filter": steps}}}


def mapping(analyzer: str) -> dict:
    """Explicit mappings: keywords for ids and exact fields, :func:`analysis` for text."""
    keyword = {"type": "keyword"}
    stored_only = {"type": "keyword", "index": False, "doc_values": False}
    text = {"type": "text", "analyzer": TEXT_ANALYZER}
    return {
        "dynamic": "strict",
        "_source": {"excludes": [f"{knn.PREFIX}*"]},  # the vectors are kept as float16 bytes (``vectors``)
        # Auxiliary fields (regain's auxiliaryField) live under "aux": untokenized by default.
        "dynamic_templates": [{"aux_untokenized": {"path_match": "aux.*", "mapping": keyword}},
                              {"aux_tokenized": {"path_match": "aux_text.*",
                                                 "mapping": {"type": "text", "analyzer": "standard"}}},
                              {"aux_stored": {"path_match": "aux_stored.*", "mapping": stored_only}}],
        "properties": {
            "aux": {"type": "object", "dynamic": True},
            "aux_text": {"type": "object", "dynamic": True},
            "aux_stored": {"type": "object", "dynamic": True},
            "id": keyword, "url": keyword, "root": keyword, "groups": keyword, "denied": keyword, "mimetype": keyword,
            "extension": keyword, "path": keyword,
            # report lines can be long (several joined); a keyword over 32 KB would reject the document
            "preparation_error": {"type": "keyword", "ignore_above": 4096},
            "title": {**text, "fields": {"raw": {"type": "keyword", "ignore_above": 512}}},
            "content": text, "summary": {**text, "index": False}, "headlines": text, "metadata": text,
            "filename": {**text, "fields": {"raw": keyword}},
            "location": text, "furniture": text, "name_keys": keyword, "copies": keyword,
            "size": {"type": "long"}, "mtime_ns": {"type": "long"},
            "last_modified": {"type": "date"}, "indexed_at": {"type": "date"},
            "content_hash": keyword, "etag": stored_only, "http_last_modified": stored_only,
            "prep_fingerprint": keyword, "outlinks": stored_only,
            knn.ANCHOR_FIELD: keyword, "passages": {"type": "integer", "index": False, "doc_values": False},
            "vectors": {"type": "binary"},
        },
    }


def _snapshot_entry(source: dict) -> SnapshotEntry:
    return SnapshotEntry(*[source.get(f, missing) for f, missing in _SNAPSHOT_DEFAULTS])


def _snapshot_entries(sources: list[dict]) -> list[SnapshotEntry]:
    return list(map(_snapshot_entry, sources))


def _folder_batches(sources: list[dict]) -> list[batches.Batch]:
    """Snapshot ``_source`` documents as folder batches of at most MOST records (transforms/batches.py), packed
    from their columns (:func:`_columns`). A folder that comes again in the next range is another batch of its
    key, which the join brings together."""
    if not sources:
        return []
    columns = _columns(sources)
    held: dict[str, list[int]] = {}
    for i, key in enumerate(map(batches.batch_key, columns[batches.URL])):
        rows = held.get(key)
        if rows is None:
            rows = held[key] = []
        rows.append(i)
    made = []
    for key, rows in held.items():
        for start in range(0, len(rows), batches.MOST):
            chunk = rows[start:start + batches.MOST]
            if len(chunk) == len(sources):  # one folder: the columns as they are
                made.append((key, batches.pack_columns(len(chunk), columns)))
                continue
            pick = itemgetter(*chunk) if len(chunk) > 1 else lambda column, i=chunk[0]: (column[i],)
            made.append((key, batches.pack_columns(len(chunk), [column if column is batches.EMPTY_LISTS else
                                                                pick(column) for column in columns])))
    return made


def _columns(sources: list[dict]) -> list:
    """The snapshot fields of ``_source`` documents as columns, read in C where every document has every field
    (those beamtrawl wrote since the fields exist; a missing field is its default); a list field that is empty
    in every document (groups, links, denials, nearly always) as ``batches.EMPTY_LISTS``."""
    try:
        columns = list(zip(*map(_SNAPSHOT_GETTER, sources)))
    except KeyError:
        columns = [[source.get(field, missing) for source in sources] for field, missing in _SNAPSHOT_DEFAULTS]
    for k in _LIST_FIELDS:
        if columns[k].count([]) == len(sources):
            columns[k] = batches.EMPTY_LISTS
    return columns


class _FastJson(JSONSerializer):
    """Answers parsed by orjson: the json module's parsing was half the client's time of a snapshot read."""

    def loads(self, s):
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError as err:
            raise SerializationError(s, err) from None


def _even(ranges: int) -> int:
    """``ranges`` rounded up to a multiple of READERS, so that no reader of a split is left idle at its end."""
    return -(-ranges // READERS) * READERS


def _node_url(url: str) -> str:
    if not re.match(r"https?://", url):
        raise fail(f"must start with http:// or https://, got {url!r}")
    if "@" in url.split("://", 1)[1].split("/", 1)[0]:  # the URL is the index's label: in messages and the report
        raise fail("must not hold a user or password; put the login in username and password")
    return url.rstrip("/")


class OpenSearchSettings(TargetSettings):
    """An OpenSearch alias (``kind: opensearch``; a section with ``url`` and no ``kind`` is one)."""

    kind: Literal["opensearch"] = "opensearch"
    """an OpenSearch alias"""
    url: Annotated[Text, AfterValidator(_node_url)]
    """the node's http(s):// URL"""
    name: IndexName
    """the alias (lower case letters, digits, '_', '.' or '-')"""
    analyzer: Literal["english", "german", "french", "italian", "standard"] = NodeOptions._field_defaults["analyzer"]
    """the text analyzer"""
    username: Text | None = None
    """the login"""
    password: Text | None = Field(None, repr=False)
    """the password, as ``${ENV_VAR}``"""
    ca_file: ExistingFile | None = None
    """certificates to trust instead of the system's"""
    verify_certs: Flag = NodeOptions._field_defaults["verify_certs"]
    """check the node's certificate"""
    timeout: Seconds = NodeOptions._field_defaults["timeout"]
    """seconds one request may take"""
    compress: Flag = NodeOptions._field_defaults["compress"]
    """gzip requests"""

    @property
    def label(self) -> str:
        return f"{self.url} ({self.name})"

    def stem(self, base: str) -> str:
        return os.path.join(base, f"beamtrawl-{self.name}")

    @property
    def node_options(self) -> NodeOptions:
        return NodeOptions(*(getattr(self, key) for key in NodeOptions._fields))


class OpenSearchIndex(IndexTarget):
    Settings = OpenSearchSettings
    semantic = True  # searches by meaning too, with the k-NN plugin (transforms/index/semantic.py)

    @classmethod
    def from_config(cls, index_config: OpenSearchSettings) -> OpenSearchIndex:
        """The alias an ``index: {url: ..., name: ...}`` section names."""
        return cls(index_config.url, index_config.name, index_config.node_options)

    def __init__(self, url: str, name: str, options: NodeOptions | None = None):
        self.url, self.name, self.options = url, name, options or NodeOptions()
        options = self.options
        analyzer = options.analyzer
        layout = json.dumps([mapping(analyzer), analysis(analyzer), _LAYOUT], sort_keys=True)
        self.physical = f"{name}-bt-{hashlib.sha256(layout.encode()).hexdigest()[:10]}"
        self.live = False  # whether the alias points at this physical index (then new partitions join it)
        self.pit_id: str | None = None
        self._client: OpenSearch | None = None
        self._partitions: set[str] = set()  # partition indices known to exist
        self._vector_fields: set[tuple[str, int]] = set()  # (partition index, dimensions) mapped
        self.knn = False  # whether the physical index keeps k-NN vectors (settled by ``prepare``)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_client"] = None  # clients are not picklable: each worker opens its own
        return state

    @property
    def _all_partitions(self) -> str:
        """Every partition index of the physical index this configuration writes."""
        return f"{self.physical},{self.physical}-*"

    def _partition(self, doc) -> str:
        """The index holding the documents of ``doc``'s access partition."""
        key = access_key(doc)
        return self.physical if key == _PUBLIC else f"{self.physical}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def _create_partition(self, index: str) -> None:
        """Create a partition index (the template gives its mapping), behind the alias if the alias
        already shows this physical index; otherwise it joins when the crawl succeeds (``finish``)."""
        if index in self._partitions:
            return
        body = {"aliases": {self.name: {}}} if self.live else {}
        try:
            self.client.indices.create(index=index, body=body)
        except TransportError as err:
            if err.error != "resource_already_exists_exception":
                raise
        self._partitions.add(index)

    @property
    def client(self) -> OpenSearch:
        if self._client is None:
            o = self.options
            auth = (o.username, o.password or "") if o.username else None
            self._client = OpenSearch(
                hosts=[self.url], http_auth=auth, verify_certs=o.verify_certs, ca_certs=o.ca_file,
                timeout=o.timeout, max_retries=5, retry_on_timeout=True,
                retry_on_status=(502, 503, 504), http_compress=o.compress, serializer=_FastJson(),
                pool_maxsize=READERS)  # a connection per snapshot reader (with one, every other page made one anew)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _where(self) -> str:
        return f"OpenSearch at {self.url}"

    # -- driver ------------------------------------------------------------------------------
    def check(self) -> None:
        try:
            self.client.info()
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"{self._where()} cannot be reached: {_short(err)}") from None
        if not self.client.indices.exists_alias(name=self.name):
            raise IndexUnavailable(f"{self._where()} has no index '{self.name}' yet; run beamtrawl crawl first")

    def prepare(self) -> None:
        try:
            self.client.info()
            self.knn = self._knn_index()
            if not self.client.indices.exists(index=self.physical):
                # The template carries the mappings, so an index created under this name by anyone
                # (a restore, a manual re-create) gets them too.
                # Longer names win where patterns overlap (docs-bt-* and docs-bt-bt-*).
                self.client.indices.put_index_template(name=f"{self.name}-beamtrawl", body={
                    "index_patterns": [f"{self.name}-bt-*"], "priority": len(self.name),
                    "template": {"settings": {"number_of_shards": 1, "number_of_replicas": 0, "knn": self.knn,
                                              "refresh_interval": "5s",
                                              "analysis": analysis(self.options.analyzer)},
                                 "mappings": mapping(self.options.analyzer)}})
                self.client.indices.create(index=self.physical)
            if not self.client.indices.exists_alias(name=self.name):
                if self.client.indices.exists(index=self.name):
                    raise IndexUnavailable(f"{self._where()}: '{self.name}' is an index, not an alias; "
                                           "choose another index name")
                self.client.indices.put_alias(index=self.physical, name=self.name)
            self.live = self.physical in self.client.indices.get_alias(name=self.name)
            self._partitions.add(self.physical)
        except IndexUnavailable:
            raise
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"{self._where()} cannot be used: {_short(err)}") from None

    def _knn_index(self) -> bool:
        """Whether the physical index keeps k-NN vectors: as it was made, or, for a new one, whether the node
        has the k-NN plugin (without it the index keeps the vectors' bytes only, for export, and a search by
        meaning finds nothing; a node that gains the plugin searches by meaning once the index is made anew)."""
        if self.client.indices.exists(index=self.physical):
            found = self.client.indices.get_settings(index=self.physical, name="index.knn")
            return str(found.get(self.physical, {}).get("settings", {}).get("index", {}).get("knn")).lower() == "true"
        return any(plugin.get("component") == "opensearch-knn" for plugin in self.client.cat.plugins(format="json"))

    def snapshot_splits(self) -> list[dict]:
        """A point in time over every partition, and splits of about SLICE_DOCS documents: one per partition
        index, or ranges of Lucene document numbers of a large one. A split is read in the order the index
        keeps its documents (``_doc``), as a scroll reads: no sort (a sort on ``id`` cost every page a sort of
        all the split's documents; OpenSearch 2 has no ``_shard_doc``), and no query that narrows it (a range
        of ids cost the node half again a scroll's work). A split's ``docs`` are the bounds of its ranges of
        about PAGE document numbers each, which :meth:`read_snapshot` reads READERS at a time. Document numbers
        are unique within a shard only, so a split names its index; an index of several shards (beamtrawl
        makes none) is one split, sorted on ``id``. The first and last ranges are open, so the splits cover
        every document whatever the bounds, which only spread the work."""
        partitions = self._all_partitions
        self.client.indices.refresh(index=partitions)
        self.pit_id = self.client.create_pit(index=partitions, params={"keep_alive": PIT_KEEP_ALIVE})["pit_id"]
        counts = self.client.search(body={  # as the point in time sees them
            "size": 0, "pit": {"id": self.pit_id, "keep_alive": PIT_KEEP_ALIVE},
            "aggs": {"partitions": {"terms": {"field": "_index", "size": 65_536}}}})["aggregations"]["partitions"]
        if not counts["buckets"]:  # an empty index: nothing to hold
            self._release_pit()
            return []
        stats = self.client.indices.stats(index=partitions, metric="docs", level="shards")["indices"]
        splits = []
        for bucket in counts["buckets"]:
            index = bucket["key"]
            if len(stats[index]["shards"]) > 1:
                splits.append({"pit": self.pit_id, "index": index, "order": "id", "docs": [None, None]})
                continue
            docs = stats[index]["primaries"]["docs"]
            numbers = docs["count"] + docs["deleted"]  # about the highest document number
            ranges = _even(bucket["doc_count"] // PAGE + 1)  # each less than a page: one search reads it
            bounds = [None, *(k * numbers // ranges for k in range(1, ranges)), None]
            per_split = max(READERS, SLICE_DOCS // PAGE // READERS * READERS)
            splits += [{"pit": self.pit_id, "index": index, "order": "_doc", "docs": bounds[k:k + per_split + 1]}
                       for k in range(0, ranges, per_split)]
        return splits

    def finish(self, succeeded: bool) -> None:
        """Driver, after the crawl: release the point in time; on success, point the alias at the
        index this crawl wrote and drop the one it replaces."""
        self._release_pit()
        if not succeeded:
            return
        self.client.indices.refresh(index=self._all_partitions)
        current = set(self.client.indices.get_alias(name=self.name))
        wanted = set(self.client.indices.get(index=self._all_partitions))
        if current == wanted:
            return
        actions = [{"remove": {"index": old, "alias": self.name}} for old in sorted(current - wanted)]
        actions += [{"add": {"index": new, "alias": self.name}} for new in sorted(wanted - current)]
        self.client.indices.update_aliases(body={"actions": actions})
        for old in sorted(current - wanted):
            self.client.indices.delete(index=old, ignore_unavailable=True)

    def _release_pit(self) -> None:
        if self.pit_id:
            try:
                self.client.delete_pit(body={"pit_id": [self.pit_id]})
            except (OpenSearchException, OSError):
                pass  # it expires by itself after PIT_KEEP_ALIVE
            self.pit_id = None

    def read_state(self) -> dict | None:
        """Kept in the ``_meta`` of the index the crawls write, so it goes when that index goes."""
        mappings = self.client.indices.get_mapping(index=self.physical)[self.physical]["mappings"]
        stored = mappings.get("_meta", {}).get("beamtrawl_state")
        return json.loads(stored) if stored else None

    def write_state(self, state: dict | None) -> None:
        self._put_meta("beamtrawl_state", json.dumps(state, sort_keys=True) if state is not None else "")

    def read_owner(self) -> dict | None:
        """Kept in the ``_meta`` of the indices behind the alias: a configuration whose mapping differs writes
        another physical index, which would replace these when its crawl succeeds."""
        try:
            if not self.client.indices.exists_alias(name=self.name):
                return None
            mappings = self.client.indices.get_mapping(index=self.name)
        except (OpenSearchException, OSError):  # unreachable: prepare() says so, in its own words
            return None
        for index in sorted(mappings):
            stored = mappings[index]["mappings"].get("_meta", {}).get("beamtrawl_owner")
            if stored:
                return json.loads(stored)
        return None

    def write_owner(self, owner: dict) -> None:
        self._put_meta("beamtrawl_owner", json.dumps(owner, sort_keys=True))

    def _put_meta(self, key: str, value: str) -> None:
        """Set one key of the physical index's ``_meta``, keeping the others (a put replaces all of it)."""
        mappings = self.client.indices.get_mapping(index=self.physical)[self.physical]["mappings"]
        meta = {**mappings.get("_meta", {}), key: value}
        self.client.indices.put_mapping(index=self.physical, body={"_meta": meta})

    # -- workers -----------------------------------------------------------------------------
    def read_snapshot(self, split: dict) -> Iterator[SnapshotEntry]:
        """The split's documents (:meth:`_ranges_of`) as records."""
        for entries in self._ranges_of(split, _snapshot_entries):
            yield from entries

    def read_snapshot_batches(self, split: dict) -> Iterator[batches.Batch]:
        """The split's documents in folder batches made from their columns (:func:`_folder_batches`), without
        a record per document."""
        for made in self._ranges_of(split, _folder_batches):
            yield from made

    def _ranges_of(self, split: dict, make: Callable[[list[dict]], list]) -> Iterator[list]:
        """``make`` of the ``_source`` of every range of a split's documents, in order, READERS ranges read at
        once: a page is one search on one thread of the node, so one reader at a time leaves the node's other
        cores idle (the profile of a read: the client waited for the node nine tenths of the time). Each reader
        makes what its range gives itself, and a range more is queued, so the node reads the next range while
        the client makes one. A failure of the node is the one line of :class:`IndexUnavailable`."""
        bounds = split["docs"]
        client = self.client  # made here: the readers share it (its connection pool is thread-safe)

        def read(first: int | None, end: int | None) -> list:
            with collector.paused():  # the parsed answers are trees: the collector only walks them (collector.py)
                return make(self._read_range(client, split, first, end))

        try:
            with ThreadPoolExecutor(READERS, thread_name_prefix="beamtrawl-snapshot") as pool:
                reading: deque = deque()
                for k in range(len(bounds) - 1):
                    reading.append(pool.submit(read, bounds[k], bounds[k + 1]))
                    if len(reading) > READERS:  # one range queued behind those read: no reader waits
                        yield reading.popleft().result()
                while reading:
                    yield reading.popleft().result()
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot read the snapshot of {self._where()}: {_short(err)}") from None

    @staticmethod
    def _read_range(client: OpenSearch, split: dict, first: int | None, end: int | None) -> list[dict]:
        """The ``_source`` of the documents numbered ``first`` up to ``end`` (None: open) in index order, with
        only the fields the freshness join needs and no total counted, a page at a time after the last one read
        (``search_after``); no page reaches past ``end``. A split sorted on ``id`` is one open range."""
        body: dict[str, Any] = {
            "size": PAGE, "_source": _SNAPSHOT_FIELDS, "sort": [split["order"]], "track_total_hits": False,
            "query": {"term": {"_index": split["index"]}}, "pit": {"id": split["pit"], "keep_alive": PIT_KEEP_ALIVE},
        }
        if first:
            body["search_after"] = [first - 1]
        sources: list[dict] = []
        while True:
            if end is not None:
                body["size"] = min(PAGE, end - body.get("search_after", [-1])[0] - 1)
                if body["size"] < 1:  # an empty range (bounds from statistics that changed meanwhile)
                    return sources
            hits = client.search(body=body, params=_SNAPSHOT_ANSWER)["hits"]["hits"]
            if end is not None and hits and hits[-1]["sort"][0] >= end:  # only where the range has gaps
                hits = [hit for hit in hits if hit["sort"][0] < end]
            sources += [hit["_source"] for hit in hits]
            if len(hits) < body["size"] or (end is not None and hits[-1]["sort"][0] >= end - 1):
                return sources
            body["search_after"] = hits[-1]["sort"]

    def upsert(self, docs: Sequence[IndexDoc]) -> list[tuple[str, str]]:
        urls = {doc.id: doc.url for doc in docs}
        failures = []
        try:
            partitions = {doc.id: self._partition(doc) for doc in docs}
            for index in set(partitions.values()):
                self._create_partition(index)
            for doc in docs:
                self._map_vectors(partitions[doc.id], knn.dimensions_of(doc.passages, doc.vectors))
            moved = [(index, i) for i, index in self._locate(list(partitions)).items() if index != partitions[i]]
            actions = [{"_index": partitions[doc.id], "_id": doc.id, "_source": _source(doc, self.knn)} for doc in docs]
            actions += [{"_op_type": "delete", "_index": index, "_id": i} for index, i in moved]
            for ok, item in helpers.streaming_bulk(
                    self.client, actions, chunk_size=500, max_chunk_bytes=MAX_REQUEST_BYTES,
                    max_retries=8, initial_backoff=1, max_backoff=30,
                    raise_on_error=False, raise_on_exception=False):
                if not ok:
                    result = next(iter(item.values()))
                    if result.get("status") != 404:
                        reason = f"index write failed: {_item_error(result)}"
                        if result.get("status") == 400:  # this document's values, not the node: see Rejected
                            reason = Rejected(f"the index rejected the document: {_item_error(result)}")
                        failures.append((urls.get(result.get("_id"), result.get("_id", "?")), reason))
        except (OpenSearchException, OSError) as err:  # the node went away during the batch
            done = {url for url, _ in failures}
            failures += [(doc.url, f"index write failed: {_short(err)}") for doc in docs if doc.url not in done]
        return failures

    def _map_vectors(self, index: str, dimensions: int) -> None:
        """Add the nested vector field of ``dimensions`` to a partition index, once (none without k-NN)."""
        if self.knn and dimensions and (index, dimensions) not in self._vector_fields:
            self.client.indices.put_mapping(index=index, body=knn.field_mapping(dimensions))
            self._vector_fields.add((index, dimensions))

    def _locate(self, ids: Sequence[str]) -> dict[str, str]:
        """{id: partition index} of the documents already indexed (as of the last refresh)."""
        body = {"query": {"ids": {"values": list(ids)}}, "_source": False, "size": len(ids)}
        hits = self.client.search(index=self._all_partitions, body=body)["hits"]["hits"]
        return {hit["_id"]: hit["_index"] for hit in hits}

    def set_access(self, changes: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        """Change who may see documents, at once. A document whose access partition changes moves to its
        new partition index, so ranking statistics always count it where its searchers see it."""
        wanted = {i: SimpleNamespace(groups=list(groups), denied=list(denied)) for i, groups, denied in changes}
        self.client.indices.refresh(index=self._all_partitions)  # _locate sees documents written just now
        actions = []
        located = self._locate(list(wanted))
        for i, index, source in self._sources(located):
            access, target = vars(wanted[i]), self._partition(wanted[i])
            self._create_partition(target)
            # the whole document again, its vectors rebuilt: a partial update would drop what _source leaves out
            self._map_vectors(target, knn.source_dimensions(source))
            rows = knn.knn_rows(source) if self.knn else {}
            actions.append({"_index": target, "_id": i, "_source": {**source, **access, **rows}})
            if target != index:
                actions.append({"_op_type": "delete", "_index": index, "_id": i})
        errors = [next(iter(item.values())) for ok, item in helpers.streaming_bulk(
            self.client, actions, chunk_size=1000, max_retries=8, initial_backoff=1, max_backoff=30,
            raise_on_error=False) if not ok and next(iter(item.values())).get("status") != 404]
        if errors:
            raise IndexUnavailable(f"access of {len(errors)} documents not changed: {_item_error(errors[0])}")

    def _sources(self, located: dict[str, str]) -> Iterator[tuple[str, str, dict]]:
        """(id, partition index, ``_source``) of located documents, read 500 at a time."""
        items = list(located.items())
        for start in range(0, len(items), 500):
            chunk = [{"_index": index, "_id": i} for i, index in items[start:start + 500]]
            for found in self.client.mget(body={"docs": chunk})["docs"]:
                if found.get("found"):
                    yield found["_id"], found["_index"], found["_source"]

    def delete(self, ids: Sequence[str]) -> None:
        actions = ({"_op_type": "delete", "_index": index, "_id": i} for i, index in self._locate(ids).items())
        errors = [item for ok, item in helpers.streaming_bulk(
            self.client, actions, chunk_size=1000, max_retries=8, initial_backoff=1, max_backoff=30,
            raise_on_error=False) if not ok and item["delete"].get("status") != 404]
        if errors:
            raise IndexUnavailable(f"{len(errors)} deletes failed: {_item_error(errors[0]['delete'])}")

    def documents(self) -> Iterator[IndexDoc]:
        """Every document behind the alias (``beamtrawl export``), scrolled in pages."""
        try:
            for hit in helpers.scan(self.client, index=self.name, query={"query": {"match_all": {}}}, size=1000):
                yield _document(hit["_source"])
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot read {self._where()}: {_short(err)}") from None

    # -- searching ---------------------------------------------------------------------------
    def count(self) -> int:
        try:
            return self.client.count(index=self.name)["count"]
        except NotFoundError:
            return 0

    def search(self, query: Query, limit: int) -> list[Hit]:
        if query.mode in (semantic.SEMANTIC, semantic.HYBRID):
            return self.search_page(query, limit, facet_size=1).hits
        body = {"size": limit, "query": _bool_query(query), **_HIGHLIGHT, "sort": ["_score", {"url": "asc"}],
                "track_scores": True, "collapse": _COLLAPSE}
        return [_hit(hit) for hit in self._search(query.groups, body).get("hits", {}).get("hits", [])]

    def search_page(self, query: Query, limit: int, offset: int = 0, order: str = RELEVANCE,
                    facet_size: int = 10) -> Page:
        if query.mode in (semantic.SEMANTIC, semantic.HYBRID):  # auto is settled before a target sees it
            return self._meaning_page(query, limit, offset, order, facet_size)
        sort = [{"last_modified": {"order": "desc", "missing": "_last"}}] if order == NEWEST else ["_score"]
        body = {"from": offset, "size": limit, "query": _bool_query(query), **_HIGHLIGHT,
                "sort": [*sort, {"url": "asc"}], "track_scores": True, "track_total_hits": True,
                "collapse": _COLLAPSE, "aggs": {**_facet_aggregations(facet_size), "copies": {
                    "cardinality": {"field": "copies", "precision_threshold": 40_000}}}}
        answer = self._search(query.groups, body)
        if not answer:
            return Page([], 0, _facets({}))
        # copies of one content are one hit: the total counts contents (exact up to 40,000 of them, as the
        # cardinality aggregation is; beyond, within a few per cent)
        return Page([_hit(hit) for hit in answer["hits"]["hits"]], answer["aggregations"]["copies"]["value"],
                    _facets(answer["aggregations"]))

    def _meaning_page(self, query: Query, limit: int, offset: int, order: str, facet_size: int) -> Page:
        """A semantic or hybrid search's page in three requests: the visible partitions; the rankings (the k-NN
        query and, for hybrid, the keyword one, side by side in one msearch), each document with what orders and
        collapses it (``_collapsed``, in Python: no scoring script, no collapse on the node); then the page's
        documents with the facets of all ranked ones. Only the keyword ranking needs ``dfs_query_then_fetch``: the
        others score by cosine or not at all, whatever the partitions' word statistics."""
        partitions, telling = self._visible_and_telling(query)
        ranked = self._ranked(query, partitions, telling) if partitions else None
        if not ranked or not ranked.scores:
            return Page([], 0, _facets({}))
        hits = _collapsed(ranked, order)
        shown = hits[offset:offset + limit]
        admitted = ranked.admitted
        body = {"size": len(shown), "track_total_hits": False, **_PASSAGES, "aggs": _facet_aggregations(facet_size),
                "query": {"bool": {"filter": [{"ids": {"values": [i for i, _ in ranked.scores]}}, *admitted["filter"]],
                                   "must_not": admitted["must_not"]}},
                "post_filter": {"ids": {"values": [i for i, _, _ in shown]}}}  # the facets count every ranked one
        answer = self._msearch(partitions, [(_QUERY_THEN_FETCH, body)])[0]
        found = {hit["_id"]: hit for hit in answer["hits"]["hits"]}
        return Page([_passage_hit({**found[i], "_score": score}, ranked, query.mode == semantic.SEMANTIC, others)
                     for i, score, others in shown if i in found], len(hits), _facets(answer.get("aggregations", {})))

    def _ranked(self, query: Query, partitions: list[str], telling: Query) -> Ranked | None:
        """A semantic or hybrid search's documents, with their scores: of a semantic search the k-NN scores,
        (1 + cosine) / 2; of a hybrid one, the fusion's, its keywords ranked by ``telling``. None: nothing to search
        by (more like this of a document the searcher may not see, or without vectors)."""
        admitted, vector = _admitted(query), query.vector
        if query.like:  # "more like this": the document's own vectors, if the searcher may see it
            found = self._by_id(query.like, ["passages", "vectors"], query.groups)
            vector = knn.document_vector(found[1]) if found else None
            admitted["must_not"].append({"ids": {"values": [query.like]}})
        if vector is None:
            return None
        searches = [(_QUERY_THEN_FETCH, {"size": semantic.DEPTH, "_source": False, "docvalue_fields": _ORDER_FIELDS,
                                         "query": knn.knn_query(vector, semantic.DEPTH, admitted)})]
        hybrid = query.mode == semantic.HYBRID and query.has_text
        keywords, names = hybrid and telling.has_text, hybrid and bool(query.name_key)
        if keywords:
            searches.append((_DFS, _ids_body(_bool_query(dataclasses.replace(telling, mode=semantic.KEYWORD)))))
        if names:
            searches.append((_QUERY_THEN_FETCH, _ids_body(
                {"bool": {"filter": [{"term": {"name_keys": query.name_key}}, _visible(query.groups)]}})))
        nearest, *others = [answer.get("hits", {}).get("hits", []) for answer in self._msearch(partitions, searches)]
        near = [hit["_id"] for hit in nearest]
        if not hybrid:
            scores = [(hit["_id"], hit["_score"]) for hit in nearest]
        else:
            keyword = [hit["_id"] for hit in others[0]] if keywords else []
            named = frozenset(hit["_id"] for hit in others[-1]) if names else frozenset()
            fused = semantic.fuse(keyword, near, named)
            scores = [(i, round(score, 6)) for i, score in fused]
        fields = {hit["_id"]: _order_fields(hit) for answer in (nearest, *others) for hit in answer}
        return Ranked(scores, admitted, vector, frozenset(near), fields)

    def document(self, doc_id: str, groups: Sequence[str]) -> Stored | None:
        found = self._by_id(doc_id, ["id", "url", "title", "filename", "mimetype", "size", "root", "mtime_ns"], groups)
        if found is None:
            return None
        identity, source = found
        return Stored(identity, source["url"], source.get("title", ""), source.get("filename", ""),
                      source.get("mimetype", ""), source.get("size", 0), source.get("root", ""),
                      source.get("mtime_ns", 0))

    def indexed(self, doc_id: str, groups: Sequence[str]) -> Indexed | None:
        found = self._by_id(doc_id, ["url", "title", "mimetype", "size", "last_modified", "content", "headlines",
                                     "metadata", "preparation_error", "aux_stored"], groups)
        if found is None:
            return None
        identity, source = found
        return Indexed(identity, source["url"], source.get("title", ""), source.get("mimetype", ""),
                       source.get("size", 0), source.get("last_modified", ""), source.get("content", ""),
                       source.get("headlines", ""), source.get("metadata", ""), source.get("preparation_error", ""),
                       dict(sorted((source.get("aux_stored") or {}).items())))

    def record(self, doc_id: str) -> dict | None:
        found = self._by_id(doc_id, list(RECORD_FIELDS))
        if found is None:
            return None
        source = found[1]
        return {name: source.get(name, _MISSING.get(name, "")) for name in RECORD_FIELDS}

    def _by_id(self, doc_id: str, fields: list[str], groups: Sequence[str] | None = None) -> tuple[str, dict] | None:
        """(id, ``fields`` of its ``_source``) of the document with this id behind the alias, in whichever
        partition it is; with ``groups``, only if a searcher holding them may see it (opening it), without
        (None), whoever may see it (explain's record)."""
        filters = [{"ids": {"values": [doc_id]}}, *([_visible(groups)] if groups is not None else [])]
        body = {"size": 1, "query": {"bool": {"filter": filters}}, "_source": fields}
        try:
            hits = self.client.search(index=self.name, body=body)["hits"]["hits"]
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot search {self._where()}: {_short(err)}") from None
        return (hits[0]["_id"], hits[0]["_source"]) if hits else None

    def _search(self, groups, body: dict) -> dict:
        """One keyword search over exactly the partitions ``groups`` may see (``_visible_partitions``), its word
        statistics theirs (``dfs_query_then_fetch``); {} when there are none."""
        partitions = self._visible_partitions(groups)
        if not partitions:
            return {}
        try:
            return self.client.search(index=",".join(partitions), body=body,
                                      params={"search_type": _DFS, "ignore_unavailable": "true"})
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot search {self._where()}: {_short(err)}") from None

    def _msearch(self, partitions: list[str], searches: list[tuple[str, dict]]) -> list[dict]:
        """The answers to searches over ``partitions`` sent in one request (the node runs them side by side), each
        (its search type, its body)."""
        header = {"index": ",".join(partitions), "ignore_unavailable": True}
        lines = [line for search_type, body in searches for line in ({**header, "search_type": search_type}, body)]
        try:
            answers = self.client.msearch(body=lines)["responses"]
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot search {self._where()}: {_short(err)}") from None
        failed = next((answer for answer in answers if "error" in answer), None)
        if failed is not None or len(answers) != len(searches):
            raise IndexUnavailable(f"cannot search {self._where()}: {_item_error(failed or {})}")
        return answers

    def _visible_partitions(self, groups) -> list[str]:
        """The partition indices behind the alias holding a document the searcher may see: all of
        their documents are visible (a partition is one access key), so BM25 over exactly them
        ranks as an index holding only what the searcher may see would."""
        return self._visible_and_counted(groups, [])[0]

    def _visible_and_telling(self, query: Query) -> tuple[list[str], Query]:
        """The visible partitions and, for a hybrid search, the query its keyword half ranks by: without the words
        (clauses of one term, not a prefix) that too many of the searcher's documents hold (semantic.is_common),
        counted in the same request, as the embedded index's keyword half leaves them out."""
        words = [] if query.mode != semantic.HYBRID else [
            n for n, clause in enumerate(query.clauses) if len(clause) == 1 and not clause[0].prefix]
        partitions, seen, holding = self._visible_and_counted(query.groups, [query.clauses[n] for n in words])
        common = {n for n, found in zip(words, holding) if semantic.is_common(found, seen)}
        return partitions, dataclasses.replace(query, clauses=[c for n, c in enumerate(query.clauses) if n not in common])

    def _visible_and_counted(self, groups, clauses: list) -> tuple[list[str], int, list[int]]:
        """(the visible partitions, how many documents the searcher may see, how many of them each clause matches)."""
        counted = {f"w{n}": {"filter": _clause_query(clause)} for n, clause in enumerate(clauses)}
        body = {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [_visible(groups)]}},
                "aggs": {"partitions": {"terms": {"field": "_index", "size": 10_000}}, **counted}}
        try:
            answer = self.client.search(index=self.name, body=body)
        except (OpenSearchException, OSError) as err:
            raise IndexUnavailable(f"cannot search {self._where()}: {_short(err)}") from None
        found = answer["aggregations"]
        return (sorted(bucket["key"] for bucket in found["partitions"]["buckets"]), answer["hits"]["total"]["value"],
                [found[f"w{n}"]["doc_count"] for n in range(len(clauses))])


class Ranked(NamedTuple):
    """The documents of a semantic or hybrid search: (id, score) best first, the bool body admitting them, the
    vector searched for, the ids the k-NN query found (whose hits show their best passage), and what orders each."""

    scores: list[tuple[str, float]]
    admitted: dict
    vector: Any
    near: frozenset
    fields: dict[str, tuple[str, str, int | None]]  # id → its url, copies and last_modified (_order_fields)


_DFS, _QUERY_THEN_FETCH = "dfs_query_then_fetch", "query_then_fetch"


def _ids_body(query: dict) -> dict:
    """A search for the ids of a query's semantic.DEPTH best documents, best first, with what orders them."""
    return {"size": semantic.DEPTH, "_source": False, "query": query, "sort": ["_score", {"url": "asc"}],
            "track_scores": True, "docvalue_fields": _ORDER_FIELDS}


#: What orders and collapses a ranked document (``_collapsed``), read from the rankings' hits.
_ORDER_FIELDS = ["url", "copies", {"field": "last_modified", "format": "epoch_millis"}]


def _order_fields(hit: dict) -> tuple[str, str, int | None]:
    """(url, copies, last_modified in milliseconds or None) of a ranking's hit."""
    fields = hit.get("fields", {})
    url, copies, millis = ((fields.get(name) or [None])[0] for name in ("url", "copies", "last_modified"))
    return url or "", copies or hit["_id"], None if millis is None else int(float(millis))


def _collapsed(ranked: Ranked, order: str) -> list[tuple[str, float, list[str]]]:
    """A semantic or hybrid search's hits, (id, score, the URLs of its other copies), in ``order`` (RELEVANCE: by
    score, NEWEST: by last_modified, missing last; then by URL): copies of one content are one hit, the first in
    order, listing the others by URL (at most MAX_LOCATIONS) — what ``_COLLAPSE`` makes of a keyword search's."""
    def place(item):
        url, _copies, millis = ranked.fields.get(item[0], ("", item[0], None))
        return ((millis is None, -(millis or 0)) if order == NEWEST else (-item[1],)) + (url,)

    groups: dict[str, list[tuple[str, float]]] = {}  # in the order of their first member
    for doc, score in sorted(ranked.scores, key=place):
        groups.setdefault(ranked.fields.get(doc, ("", doc, None))[1], []).append((doc, score))
    return [(first, score, sorted(ranked.fields[doc][0] for doc, _ in others)[:MAX_LOCATIONS])
            for (first, score), *others in groups.values()]


def _facet_aggregations(facet_size: int) -> dict:
    """A page's facets and date facet."""
    return {**{name: {"terms": {"field": name, "size": facet_size}} for name in FACET_FIELDS}, DATE_FACET: _date_ranges()}


def _facets(aggregations: dict) -> dict[str, list[tuple[str, int]]]:
    """The facets of a search's aggregations (none: empty)."""
    if not aggregations:
        return {name: [] for name in (*FACET_FIELDS, DATE_FACET)}
    facets = {name: [(b["key"], b["doc_count"]) for b in aggregations[name]["buckets"] if b["key"]]
              for name in FACET_FIELDS}
    dates = {b["key"]: b["doc_count"] for b in aggregations[DATE_FACET]["buckets"]}  # sorted by "from"
    facets[DATE_FACET] = [(value, dates[value]) for _label, value, _low, _high in date_buckets() if dates.get(value)]
    return facets


def _date_ranges() -> dict:
    """The date facet (base.date_buckets) as a range aggregation over ``mtime_ns``, in the buckets' order."""
    ranges = [{"key": value, **({"from": low} if low is not None else {}), **({"to": high} if high is not None else {})}
              for _label, value, low, high in date_buckets()]
    return {"range": {"field": RANGE_COLUMNS[DATE_FACET], "ranges": ranges}}


def _admitted(query: Query) -> dict:
    """The body of a bool query admitting what the query's exclusions and filters admit and its searcher may see
    (``_visible``)."""
    must_not = [_term_query(term) for term in query.excluded]
    filters = []
    for name, value, negated in query.filters:
        (must_not if negated else filters).append(_filter(name, value))
    filters.append(_visible(query.groups))
    return {"filter": filters, "must_not": must_not}


def _bool_query(query: Query) -> dict:
    """The query as one bool query: its text, exclusions and filters, and who may see a document
    (``_visible``), so hits, highlights, totals and aggregations all see the same documents."""
    must = [_clause_query(clause) for clause in query.clauses]
    matching = {"bool": {"must": must or [{"match_all": {}}], **_admitted(query), "should": _exact_name_boost(query)}}
    if not query.has_text:
        return matching
    return {"function_score": {"query": matching, "functions": [{"filter": _CHANGE_LOGS, "weight": CHANGE_LOG_WEIGHT}],
                               "score_mode": "multiply", "boost_mode": "multiply"}}


#: Change logs and release notes by file name (query.is_change_log): the name before its first dot, any case.
_CHANGE_LOGS = {"bool": {"should": [q for name in CHANGE_LOG_NAMES for q in (
    {"term": {"filename.raw": {"value": name, "case_insensitive": True}}},
    {"prefix": {"filename.raw": {"value": name + ".", "case_insensitive": True}}})], "minimum_should_match": 1}}


def _passage_hit(hit: dict, ranked: Ranked, cosine: bool, locations: list[str]) -> Hit:
    """A hit showing the passage nearest the query's meaning if the k-NN query found it (else the beginning of its
    text), scored by its cosine (semantic) or its fused score (hybrid), with its copies' ``locations``."""
    source = hit["_source"]
    number = knn.best_passage(source, ranked.vector) if hit["_id"] in ranked.near else None
    spans, content = source.get("passages") or [], source.get("content") or ""
    shown = ""
    if number is not None and 2 * number + 1 < len(spans) and 0 <= spans[2 * number] < spans[2 * number + 1]:
        start, stop = spans[2 * number], spans[2 * number + 1]
        shown = content[start:min(stop, start + PASSAGE_CHARS)] + ("…" if stop > start + PASSAGE_CHARS else "")
    found = _hit({**hit, "highlight": {"content": [shown]} if shown else {},
                  "_source": {**source, "summary": source.get("summary") or content[:200]}})
    found = dataclasses.replace(found, locations=locations)
    return dataclasses.replace(found, score=knn.cosine(hit.get("_score") or 0.0)) if cosine else found


def _source(doc: IndexDoc, vectors: bool = True) -> dict:
    """A document as it is indexed: with its k-NN rows if ``vectors`` (an index with k-NN)."""
    source = doc._asdict()
    source.update(knn.stored(doc.passages, doc.vectors, rows=vectors))
    source[knn.ANCHOR_FIELD] = knn.ANCHOR
    source["groups"] = list(doc.groups)
    source["denied"] = list(doc.denied)
    source["outlinks"] = list(doc.outlinks)
    source["location"] = doc.url
    source["name_keys"] = name_keys(doc.filename, doc.extension, doc.title)
    source["copies"] = doc.content_hash or doc.id  # copies of one content are one hit (sqlite._COPIES)
    aux = source.pop("aux", None) or ()
    for part, wanted in (("aux", lambda a: a.index and not a.tokenize), ("aux_text", lambda a: a.index and a.tokenize),
                         ("aux_stored", lambda a: a.store)):
        # Tokenized values go in as the words the embedded index matches, so both agree on "a word".
        values = {a.name: " ".join(tokens(a.value)) if part == "aux_text" else a.value for a in aux if wanted(a)}
        if values:
            source[part] = values
    return source


def _document(source: dict) -> IndexDoc:
    """A stored ``_source`` as the document it was made from (auxiliary fields with the flags it has)."""
    names = {*source.get("aux", {}), *source.get("aux_text", {}), *source.get("aux_stored", {})}
    aux = [AuxValue(name, source.get("aux_stored", {}).get(name) or source.get("aux", {}).get(name)
                    or source.get("aux_text", {}).get(name, ""),
                    name in source.get("aux_stored", {}), name in source.get("aux", {}) or name in source.get("aux_text", {}),
                    name in source.get("aux_text", {})) for name in sorted(names)]
    return IndexDoc(**{f: source.get(f, _MISSING.get(f, "")) for f in IndexDoc._fields if f not in ("aux", "vectors")},
                    vectors=knn.decoded(source.get("vectors")), aux=aux)


def _term_query(term: Term) -> dict:
    """A term in any searchable field: its words next to each other, the last one a prefix if asked;
    the text goes through the field's analyzer, never through a query parser."""
    if term.prefix and len(words(term.text)) == 1:
        return {"multi_match": {"query": term.text, "fields": _SEARCH_FIELDS, "type": "bool_prefix"}}
    match = {"query": term.text, "fields": _SEARCH_FIELDS, "type": "phrase_prefix" if term.prefix else "phrase"}
    if term.prefix:
        match["max_expansions"] = MAX_PREFIX_WORDS
    return {"multi_match": match}


def _clause_query(clause: tuple[Term, ...]) -> dict:
    """A required clause: any of its terms (several when joined by OR)."""
    if len(clause) == 1:
        return _term_query(clause[0])
    return {"bool": {"should": [_term_query(t) for t in clause], "minimum_should_match": 1}}


def _exact_name_boost(query: Query) -> list[dict]:
    """Optional clauses that lift a document whose name equals the query (query.name_keys)."""
    if not query.name_key:
        return []
    return [{"constant_score": {"filter": {"term": {"name_keys": query.name_key}}, "boost": EXACT_NAME_BOOST}}]


def _wildcard_literal(text: str) -> str:
    """``text`` for a wildcard query with ``*`` as its only wildcard (``?`` and ``\\`` match themselves)."""
    return text.replace("\\", "\\\\").replace("?", "\\?")


def _visible(groups) -> dict:
    """Public documents and those sharing a group with the searcher, unless one of the searcher's
    groups (or EVERYONE, which every searcher holds) is denied."""
    public = {"bool": {"must_not": {"exists": {"field": "groups"}}}}
    allowed = public if not groups else {
        "bool": {"should": [public, {"terms": {"groups": list(groups)}}], "minimum_should_match": 1}}
    return {"bool": {"filter": [allowed], "must_not": [{"terms": {"denied": [*groups, EVERYONE]}}]}}


def _filter(name: str, value: str) -> dict:
    if name in RANGE_FIELDS:
        low, high = range_of(name, value)
        return {"range": {RANGE_COLUMNS[name]: {k: v for k, v in (("gte", low), ("lt", high)) if v is not None}}}
    if name == "mimetype":
        return {"wildcard": {"mimetype": _wildcard_literal(value.lower())}}
    if name == "extension":
        return {"term": {"extension": value.lower().lstrip(".")}}
    if name == "path":  # a folder, by whole segments (the stored path ends with "/")
        return {"prefix": {"path": value.rstrip("/") + "/"}}
    if name == "url":
        return {"prefix": {"url": value}}
    # An auxiliary field: the exact value (as typed or lower-cased), or every word of a tokenized one.
    return {"bool": {"should": [{"terms": {f"aux.{name}": sorted({value, value.lower()})}},
                                {"match": {f"aux_text.{name}": {"query": value, "operator": "and"}}}],
                     "minimum_should_match": 1}}


#: Characters of a field the highlighter reads (OpenSearch's index.highlight.max_analyzed_offset default).
HIGHLIGHT_CHARACTERS = 1_000_000
#: What a hit returns and how it is highlighted. A document longer than the index may analyse for
#: highlighting is highlighted in its first part, not refused.
_HIGHLIGHT_SOURCE = ["url", "title", "filename", "mimetype", "size", "last_modified", "summary", "aux_stored"]
_HIGHLIGHT = {
    "_source": _HIGHLIGHT_SOURCE,
    "highlight": {"fields": {"content": {}, "headlines": {}},
                  "pre_tags": [MARK_ON], "post_tags": [MARK_OFF], "fragment_size": 160,
                  "number_of_fragments": 1, "encoder": "default", "max_analyzer_offset": HIGHLIGHT_CHARACTERS},
}


#: What a hit of a semantic or hybrid search returns: the text and spans its best passage is cut from, and the vectors
#: that find it (opensearch_vectors.best_passage).
_PASSAGES = {"_source": [*_HIGHLIGHT_SOURCE, "content", "passages", "vectors"]}


#: Copies of one content (the ``copies`` field) are one hit, listing the other matches' URLs (base.Hit.locations).
_COLLAPSE = {"field": "copies", "inner_hits": {"name": "copies", "size": MAX_LOCATIONS + 1, "_source": ["url"],
                                               "sort": [{"url": "asc"}]}}


def _hit(hit: dict) -> Hit:
    source, marked = hit["_source"], hit.get("highlight", {})
    # the text around a match, else the headlines around theirs, else the beginning of the text: a match in
    # the title, name or URL alone shows the text (as the embedded index's _SNIPPET does), never the URL
    fragment = next((marked[f][0] for f in ("content", "headlines") if marked.get(f)), None)
    if fragment is None:
        fragment = (source.get("summary") or "")[:200]
    plain, marked = render_snippet(fragment)
    return Hit(url=source["url"], title=source.get("title") or source.get("filename", ""),
               snippet=plain, snippet_html=marked,
               score=round(hit.get("_score") or 0.0, 4), mimetype=source.get("mimetype", ""),
               size=source.get("size", 0), last_modified=source.get("last_modified", ""),
               extra=dict(source.get("aux_stored") or {}), id=hit["_id"], locations=_locations(hit))


def _locations(hit: dict) -> list[str]:
    """The URLs of a collapsed hit's other copies among the matches, by URL."""
    copies = hit.get("inner_hits", {}).get("copies", {}).get("hits", {}).get("hits", [])
    return [c["_source"]["url"] for c in copies if c["_id"] != hit["_id"]][:MAX_LOCATIONS]


def _item_error(result: dict) -> str:
    error = result.get("error")
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('reason', '')} (status {result.get('status')})"
    return f"{error or 'error'} (status {result.get('status')})"


def _short(err: Exception) -> str:
    if isinstance(err, TransportError) and isinstance(err.status_code, int):
        info = err.info.get("error", {}) if isinstance(err.info, dict) else {}
        causes = info.get("root_cause") or info.get("failed_shards") or [] if isinstance(info, dict) else []
        cause = causes[0] if causes and isinstance(causes[0], dict) else {}
        reason = cause.get("reason") or (cause.get("reason", {}) if isinstance(cause.get("reason"), dict) else "")
        return f"HTTP {err.status_code} {_one_line(str(err.error))}" + (f" ({str(reason)[:200]})" if reason else "")
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text[:300]


def _one_line(answer: str) -> str:
    """A server's error as one short line: an HTML page (a proxy's 401 page) by its title, else its words."""
    title = re.search(r"<title>(.*?)</title>", answer, re.DOTALL | re.IGNORECASE)
    return " ".join((title.group(1) if title else answer).split())[:200]
