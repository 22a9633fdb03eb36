"""Folder batches (transforms/batches.py) and the freshness join's classification of a folder's batches
(transforms/freshness.py): the fast count of unchanged files decides what the per-document path decides."""

from __future__ import annotations

import apache_beam as beam
from beamtrawl.pipeline.config import parse_config
from beamtrawl.transforms import batches
from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.compare import InPlace, Unchanged
from beamtrawl.transforms.freshness import ARRIVED, CLAIMED, EVENTS, VANISHED, _Classify
from beamtrawl.transforms.records import Entry, Listing, SnapshotEntry
from beamtrawl.transforms.urls import doc_id

FOLDER = "file:///srv/docs/a"
FINGERPRINT = "f" * 16


def _entry(name: str, size: int = 10, **fields) -> Entry:
    url = f"{FOLDER}/{name}"
    return Entry(doc_id(url), url, "file:///srv/docs", 2, size, 1_000, "", None, "", [], "", "", FOLDER, "",
                 listing="L1")._replace(**fields)


def _indexed(name: str, size: int = 10, **fields) -> SnapshotEntry:
    url = f"{FOLDER}/{name}"
    return SnapshotEntry(doc_id(url), url, size, 1_000, FINGERPRINT, "", "", "", [], [], [],
                         "file:///srv/docs")._replace(**fields)


def test_batches_are_keyed_by_folder_and_hold_at_most_most():
    records = [_entry(f"f{n}") for n in range(batches.MOST + 3)] + [_entry("x")._replace(url="file:///srv/b/y")]
    out = list(batches.by_folder(records))
    assert [(key, len(batches.rows(blob))) for key, blob in out] == [
        (FOLDER, batches.MOST), (FOLDER, 3), ("file:///srv/b", 1)]
    assert [tuple(e) for e in batches.unpack(out[1], Entry)] == [tuple(e) for e in records[batches.MOST:-1]]
    assert batches.unpack(out[2], Entry)[0].url == "file:///srv/b/y"
    assert batches.batch_key("http://host/a/b.html") == "http://host/a/b.html"  # the web: a page by itself
    assert list(batches.keep(out[2], lambda url: "b/" not in url)) == []
    assert list(batches.keep(out[2], lambda url: "b/" in url)) == [out[2]]


def test_a_batch_keeps_each_value_as_it_was():
    """Columns store a value once only where every record holds that very object: equal is not enough."""
    same = "file:///srv/docs"
    records = [(1, same, [], [], ""), (True, same, [], ["g"], ""), (1, same, [], [], "")]
    assert batches.rows(batches.pack(records)) == records
    assert [type(r[0]) for r in batches.rows(batches.pack(records))] == [int, bool, int]
    unpacked = batches.rows(batches.pack(records))
    assert unpacked[0][2] is not unpacked[1][2]  # each record its own list
    ragged = [(1, 2), (1, 2, 3)]  # a third party's malformed records stay as they were, for the join to report
    assert batches.rows(batches.pack(ragged)) == ragged and not batches.Columns([batches.pack(ragged)]).regular
    assert batches.rows(batches.pack([])) == []
    urls = [(f"file:///srv/docs/a/{name}", f"fp-{len(name) // 9}") for name in ("x", "y", "")]  # equal, not one str
    assert batches.rows(batches.pack(urls)) == urls  # stored as the folder once, then each name
    assert batches.Columns([batches.pack(urls)]).field(0) == [u for u, _ in urls]
    both = batches.Columns([batches.pack(records), batches.pack(records[:1])])
    assert both.n == 4 and both.field(0) == [1, True, 1, 1] and both.row(3) == records[0]


def _classify(found: list[Entry], indexed: list[SnapshotEntry], incomplete=(), index=None, claims=()):
    """The join's classification of one folder: ``found`` in two batches, ``indexed`` in one; with ``index``
    (listings compared in place) the indexed side only says that the index holds the folder, and ``claims``
    come beside."""
    rules = Rules(parse_config({"start": [{"url": "file:///srv/docs"}], "index": {"path": "/tmp/x.sqlite"}},
                               "/tmp/batches.yaml"))
    classify = _Classify(rules, FINGERPRINT, index=index)
    classify.setup()
    half = len(found) // 2  # two batches on the found side, as a folder of more than MOST arrives
    blobs = [batches.pack([tuple(e) for e in found[:half]]), batches.pack([tuple(e) for e in found[half:]])]
    blobs = [blob for blob in blobs if batches.rows(blob)]
    side = [b""] if index is not None else [batches.pack([tuple(s) for s in indexed])]
    outputs = classify.process((FOLDER, {"found": blobs, "indexed": side, CLAIMED: list(claims)}),
                               list(incomplete), [])
    outputs += list(classify.finish_bundle())
    main = [o for o in outputs if not isinstance(o, beam.pvalue.TaggedOutput)]
    tagged = {}
    for o in outputs:
        if isinstance(o, beam.pvalue.TaggedOutput):
            tagged.setdefault(o.tag, []).append(o.value)
    counts = {}
    for value in tagged.get(EVENTS, []):
        event = getattr(value, "value", value)
        counts[event.kind] = counts.get(event.kind, 0) + event.count
    return main, tagged, counts


def test_a_folders_batches_are_classified_as_document_by_document():
    found = [_entry("same"), _entry("bigger", size=11), _entry("new"), _entry("regrouped", groups=["staff"]),
             _entry("same2")]
    indexed = [_indexed("same"), _indexed("bigger"), _indexed("regrouped"), _indexed("gone"), _indexed("same2")]
    main, tagged, counts = _classify(found, indexed)
    assert sorted(e.url.rsplit("/", 1)[1] for e in main) == ["bigger", "new", "regrouped"]
    assert [s.url.rsplit("/", 1)[1] for s in tagged[VANISHED]] == ["gone"]
    assert counts["unchanged"] == 2 and counts["changed"] == 2 and counts["new"] == 1
    assert counts["accepted"] == 5 and counts["in_index"] == 5
    arrivals = [getattr(a, "value", a) for a in tagged[ARRIVED]]
    assert [(a.listing, a.documents) for a in arrivals] == [("L1", 5)]  # every entry counted for its listing


def test_a_malformed_entry_is_its_own_report_line_not_the_folders_failure():
    """A third party's source may hand on an entry with a field of the wrong type: the folder's other
    documents are classified, the bad one is one line."""
    found = [_entry("same"), _entry("bad", groups=5)]
    main, _tagged, counts = _classify(found, [_indexed("same"), _indexed("bad")])
    assert main == []
    assert counts["unchanged"] == 1 and counts["failed"] == 1


def test_a_document_found_or_indexed_twice_takes_the_general_path():
    """Overlapping start URLs find one file twice; an index may hold one id twice: neither is the fast count."""
    found = [_entry("twice"), _entry("twice", listing="L2"), _entry("same"), _entry("doubled")]
    indexed = [_indexed("twice"), _indexed("same"), _indexed("doubled"), _indexed("doubled")]
    main, _tagged, counts = _classify(found, indexed)
    assert main == []
    assert counts["unchanged"] == 3 and counts["duplicate"] == 1 and counts["in_index"] == 4


def test_the_embedded_indexs_folder_batches_hold_what_its_records_do(tmp_path):
    """The snapshot read from SQLite's columns (EmbeddedIndex.read_snapshot_batches) makes the batches the
    records would make: folders that come again later, a folder of more than MOST, a web page by itself, a
    URL without a '/', access lists that are not empty."""
    from beamtrawl.transforms.index.sqlite import EmbeddedIndex

    index = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    index.prepare()
    urls = [f"{FOLDER}/one", "file:///srv/docs/b/one", f"{FOLDER}/two", "https://host/a/page.html",
            "https://host/a/other.html", "no-slash", *(f"file:///srv/docs/c/{n}" for n in range(batches.MOST + 2))]
    db = index._connect()
    columns = [name for _, name, *_ in db.execute("PRAGMA table_info(docs)") if name != "rid"]
    for n, url in enumerate(urls):
        row = dict.fromkeys(columns, "")
        row.update(id=doc_id(url), url=url, size=n, mtime_ns=n * 1000, groups='["g1", "g2"]' if n == 1 else "[]",
                   outlinks="[]", denied='["EVERYONE"]' if n == 2 else "[]", root="file:///srv/docs")
        db.execute(f"INSERT INTO docs({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    (split,) = index.snapshot_splits()

    def by_key(made):
        held: dict[str, list] = {}
        for key, blob in made:
            assert len(batches.rows(blob)) <= batches.MOST
            held.setdefault(key, []).extend(batches.rows(blob))
        return {key: sorted(rows) for key, rows in held.items()}

    from_columns = by_key(index.read_snapshot_batches(split))
    assert from_columns == by_key(batches.by_folder(index.read_snapshot(split)))
    assert sorted(from_columns) == sorted({batches.batch_key(url) for url in urls})
    assert from_columns["file:///srv/docs/b"][0][8] == ["g1", "g2"]
    index.close()


def _index_of(tmp_path, indexed: list[SnapshotEntry]):
    """An embedded index holding ``indexed``, written as a crawl writes its rows' freshness columns."""
    from beamtrawl.transforms.index.sqlite import EmbeddedIndex

    index = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    index.prepare()
    db = index._connect()
    columns = [name for _, name, *_ in db.execute("PRAGMA table_info(docs)") if name != "rid"]
    for old in indexed:
        row = dict.fromkeys(columns, "")
        row.update(id=old.id, url=old.url, size=old.size, mtime_ns=old.mtime_ns, prep_fingerprint=old.prep_fingerprint,
                   groups="[]", outlinks="[]", denied="[]", root=old.root, length=0, part=0,
                   folder=batches.batch_key(old.url))
        db.execute(f"INSERT INTO docs({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    return index


def _listing(found: list[Entry], documents: int | None = None) -> Listing:
    return Listing(FOLDER, "L1", True, len(found) if documents is None else documents, [])


FOUND = [_entry("same"), _entry("bigger", size=11), _entry("new"), _entry("regrouped", groups=["staff"]),
         _entry("same2")]
INDEXED = [_indexed("same"), _indexed("bigger"), _indexed("regrouped"), _indexed("gone"), _indexed("same2")]


def test_a_folder_compared_where_it_is_listed_is_classified_as_by_the_join(tmp_path):
    """transforms/compare.py: the listing keeps its unchanged entries back and claims the folder; the join then
    judges the rest exactly as it judges both sides whole, arrivals included."""
    index = _index_of(tmp_path, INDEXED)
    rest, claim = InPlace(index, FINGERPRINT).claim(FOLDER, FOUND, _listing(FOUND))
    assert sorted(e[1].rsplit("/", 1)[1] for e in rest) == ["bigger", "new", "regrouped"] and claim
    main, tagged, counts = _classify([Entry(*e) for e in rest], [], index=index, claims=[claim])
    whole = _classify(FOUND, INDEXED)
    assert sorted(e.url for e in main) == sorted(e.url for e in whole[0])
    assert tagged[VANISHED] == whole[1][VANISHED] and counts == whole[2]
    assert [(a.value.listing, a.value.documents) for a in tagged[ARRIVED]] == [("L1", 5)]
    # its claim lost in transit: the folder is read from the index, and the listing is short of two arrivals
    main, tagged, counts = _classify([Entry(*e) for e in rest], [], index=index)
    assert sorted(s.url.rsplit("/", 1)[1] for s in tagged[VANISHED]) == ["gone", "same", "same2"]
    assert [(a.value.listing, a.value.documents) for a in tagged[ARRIVED]] == [("L1", 3)]
    index.close()


def test_files_found_unchanged_as_they_are_listed_are_claimed_as_their_entries_would_be(tmp_path):
    """A listing that compares each file as it stats it (compare.Known) makes no entry of an unchanged one: its
    claim is the one the folder's entries would have made; where the folder cannot be claimed (its listing did
    not yield exactly these), the unchanged files go on as entries after all, marked as the listing's."""
    index = _index_of(tmp_path, INDEXED)
    in_place = InPlace(index, FINGERPRINT)
    listed = [e for e in FOUND if e.groups == FOUND[0].groups]  # a listing makes its entries alike but for these
    known = in_place.known(FOLDER, _entry("template")._replace(listing=""))
    held = [e for e in listed if known.found(e.id, e.size, e.mtime_ns)]
    assert sorted(e.url.rsplit("/", 1)[1] for e in held) == ["same", "same2"]
    assert not known.found(held[0].id, held[0].size, held[0].mtime_ns)  # once only
    batch = [e for e in listed if e not in held]

    def unchanged():
        return Unchanged(FOLDER, known, lambda url, e: e._replace(listing=""), [e.url for e in held], held
                         ).listed_by("L1")

    rest, claim = in_place.claim(FOLDER, batch, _listing(listed), unchanged())
    assert (rest, claim) == InPlace(index, FINGERPRINT).claim(FOLDER, listed, _listing(listed))
    main, tagged, counts = _classify([Entry(*e) for e in rest], [], index=index, claims=[claim])
    whole = _classify(listed, INDEXED)
    assert sorted(e.url for e in main) == sorted(e.url for e in whole[0])
    assert tagged[VANISHED] == whole[1][VANISHED] and counts == whole[2]
    for short in (_listing(listed, len(listed) + 1), _listing(listed)._replace(listing="L2")):
        assert in_place.claim(FOLDER, batch, short, unchanged()) == (batch + held, None)
    index.close()


def test_only_a_whole_listing_of_the_folder_is_claimed(tmp_path):
    """A batch that is not exactly its listing's entries of that container, entries a fault will drop, or an
    index that cannot be read: the batch goes on whole and nothing is claimed."""
    index = _index_of(tmp_path, INDEXED)
    in_place = InPlace(index, FINGERPRINT)
    for key, listing in ((FOLDER, _listing(FOUND, 6)), (FOLDER, _listing(FOUND)._replace(url=FOLDER + "/x")),
                         (FOLDER, _listing(FOUND)._replace(listing="L2")), (FOLDER + "/x", _listing(FOUND))):
        assert in_place.claim(key, FOUND, listing) == (FOUND, None)
    assert InPlace(index, FINGERPRINT, "same2$").claim(FOLDER, FOUND, _listing(FOUND)) == (FOUND, None)
    gone = InPlace(type(index)(str(tmp_path / "missing" / "index.sqlite")), FINGERPRINT)
    assert gone.claim(FOLDER, FOUND, _listing(FOUND)) == (FOUND, None)
    index.close()


def test_a_folder_claimed_twice_deletes_nothing_of_it(tmp_path):
    """Two listings that compared one folder (the crawl's conditions rule it out): what one did not find may be
    what the other found unchanged, so nothing not found is deleted, and one line names the folder."""
    index = _index_of(tmp_path, INDEXED)
    in_place = InPlace(index, FINGERPRINT)
    first = in_place.claim(FOLDER, FOUND, _listing(FOUND))
    second = in_place.claim(FOLDER, FOUND[:1], _listing(FOUND[:1]))
    rest = [Entry(*e) for e in first[0] + second[0]]
    main, tagged, counts = _classify(rest, [], index=index, claims=[first[1], second[1]])
    assert VANISHED not in tagged
    assert counts["kept"] == 2  # "gone", and "same2", which the second did not find and the first found unchanged
    assert sorted(e.url.rsplit("/", 1)[1] for e in main) == ["bigger", "new", "regrouped"]
    lines = [e for e in (getattr(e, "value", e) for e in tagged[EVENTS]) if e.reason]
    assert [(e.kind, e.url) for e in lines] == [("incomplete", FOLDER)]
    index.close()


def test_an_index_of_schema_version_7_gets_each_documents_folder(tmp_path):
    """Schema 8 added docs.folder: an older index's next crawl fills it from the URLs, so a listing finds the
    folder's documents; a row whose URL has another key than its folder column says is left out (kept)."""
    import sqlite3

    index = _index_of(tmp_path, [*INDEXED, _indexed("page")._replace(url="https://host/a/page.html")])
    index.close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        db.execute("DROP INDEX docs_folder")
        db.execute("ALTER TABLE docs DROP COLUMN folder")
        db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    index.prepare()
    assert sorted(row[1] for row in index.folder_rows(FOLDER)) == sorted(s.url for s in INDEXED)
    assert sorted(key for key, _ in index.indexed_folders()) == [FOLDER, "https://host/a/page.html"]
    index._connect().execute("UPDATE docs SET folder = ? WHERE url LIKE '%/gone'", ("file:///srv/docs/b",))
    assert [row[1] for row in index.folder_rows("file:///srv/docs/b")] == []
    index.close()
