"""The search syntax (parse_query) and the embedded SQLite/FTS5 index it runs against."""

from __future__ import annotations

import json
import pickle
import sqlite3

import pytest
from beamtrawl.transforms.index import EmbeddedIndex, IndexUnavailable
from beamtrawl.transforms.index.query import (
    MAX_PREFIX_TERMS,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    Query,
    QueryError,
    Term,
    name_keys,
    parse_query,
    words,
)
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.urls import doc_id

from tests.conftest import beamtrawl

# -- parse_query -----------------------------------------------------------------------------------------


def test_words_phrases_exclusions_prefixes():
    query = parse_query('spectrometer "polar bear" -draft -"old version" calib* "no star*"')
    assert query == Query(clauses=[(Term("spectrometer"),), (Term("polar bear"),), (Term("calib", prefix=True),),
                                   (Term("no star*"),)],
                          excluded=[Term("draft"), Term("old version")])
    assert query.has_text


def test_a_prefix_ending_in_punctuation_is_a_prefix_of_its_last_word():
    """Issue 26, item 7: ``ab:*`` was a prefix on the embedded index and the word ``ab`` on OpenSearch."""
    assert parse_query("ab:*").clauses == [(Term("ab", prefix=True),)]
    assert parse_query("deb.* lic-_*").clauses == [(Term("deb", prefix=True),), (Term("lic", prefix=True),)]
    assert parse_query("co:py*").clauses == [(Term("co:py", prefix=True),)]


def test_or_joins_neighbours_and_is_a_word_elsewhere():
    query = parse_query("bash OR zsh OR fish manual or OR")
    assert query.clauses == [(Term("bash"), Term("zsh"), Term("fish")), (Term("manual"),), (Term("or"),)]
    assert parse_query("OR bash").clauses == [(Term("bash"),)]
    assert parse_query("bash|zsh").clauses == [(Term("bash|zsh"),)]  # one term: the phrase "bash zsh"


def test_words_split_at_punctuation_lower_case_without_accents():
    assert words("Quokkareport.final.txt annual_numbat_summary École bash|zsh C++ 3.11") == [
        "quokkareport", "final", "txt", "annual", "numbat", "summary", "ecole", "bash", "zsh", "c", "3", "11"]


def test_name_keys_and_the_query_key():
    assert name_keys("subprocess.html", "html", "subprocess — Subprocess management — Python 3.11.2 documentation") \
        == ["python 3 11 2 documentation", "subprocess", "subprocess html", "subprocess management",
            "subprocess subprocess management python 3 11 2 documentation"]
    assert name_keys("annual_numbat_summary.txt", "txt", "") == ["annual numbat summary", "annual numbat summary txt"]
    # issue 28, item 10: a manual page is named without its section and compression, a file by its whole name
    assert "grep" in name_keys("grep.1.gz", "gz", "grep, egrep, fgrep, rgrep - print lines that match patterns")
    assert "sources list" in name_keys("sources.list", "list", "")
    assert parse_query("Annual numbat_summary -draft").name_key == "annual numbat summary"
    assert parse_query("deb*").name_key == parse_query("a OR b").name_key == ""


def test_field_filters_with_negation():
    query = parse_query("mimetype:text/* Extension:PDF -extension:csv path:/srv/docs/lab url:file:///srv "
                        'path:"/srv/meeting notes"')
    assert query.filters == [("mimetype", "text/*", False), ("extension", "PDF", False),
                             ("extension", "csv", True), ("path", "/srv/docs/lab", False),
                             ("url", "file:///srv", False), ("path", "/srv/meeting notes", False)]
    assert not query.has_text


def test_unknown_field_is_searched_as_text():
    assert parse_query("author:smith report").clauses == [(Term("author:smith"),), (Term("report"),)]


@pytest.mark.parametrize("text", ["", "   ", "-", "* -*", "-draft", '""'])
def test_nothing_to_search_for(text):
    with pytest.raises(QueryError):
        parse_query(text)


def test_filter_without_value():
    with pytest.raises(QueryError, match="path: needs a value"):
        parse_query('report path:""')


@pytest.mark.parametrize("text, message", [
    (" ".join(["x*"] * 9), "too many prefix terms"),  # 100 of them took 16 s on 2,000 documents
    (" OR ".join(["a*"] * 500), "too long"),  # took over 120 s
    (" OR ".join(["a"] * 33), "too many terms"),
    (" ".join(f"-w{n}" for n in range(3000)) + " select", "too long"),  # once an FTS5 "expression tree too large"
    (" ".join(f"w{n}" for n in range(33)), "too many terms"),
    (" ".join(f"-w{n}" for n in range(30)) + " select extension:txt extension:pdf", "too many terms"),
    ("a" * 1001, "too long"),
])
def test_queries_beyond_the_bounds_are_refused(text, message):
    with pytest.raises(QueryError, match=message):
        parse_query(text)


def test_a_query_at_the_bounds_is_accepted(index):
    text = " OR ".join([*(f"w{n}*" for n in range(MAX_PREFIX_TERMS)), *(f"w{n}" for n in range(24))])
    assert len(text) <= MAX_QUERY_CHARS
    query = parse_query(text)
    assert sum(len(clause) for clause in query.clauses) == MAX_TERMS
    assert index.search(query, limit=10) == []


# -- the embedded index ----------------------------------------------------------------------------------

ROOT = "file:///srv/docs"
DOCS = {  # path below ROOT: (mimetype, title, content)
    "lab/calibration.txt": ("text/plain", "", "The spectrometer calibration procedure for the optical bench."),
    "lab/notes.txt": ("text/plain", "", "The spectrometer needs a new lamp; calibration is overdue."),
    "labs/polar.txt": ("text/plain", "", "A polar bear walked past the station at dawn."),
    "labs/sighting.html": ("text/html", "Field report", "<script>alert(1)</script> polar night, then a bear sighting."),
    "budget.csv": ("text/csv", "", "spectrometer budget draft, optical parts"),
    "manual.pdf": ("application/pdf", "Manual", "spectrometer manual, chapter one"),
    "rules/a.txt": ("text/plain", "Centrifuge", "safety rules for all the lab machines"),
    "rules/b.txt": ("text/plain", "Machine rules", "safety rules for the centrifuge machines"),
}


def url_of(name: str) -> str:
    return f"{ROOT}/{name}"


def make_doc(name: str, mimetype: str = "text/plain", title: str = "", content: str = ""):
    url = url_of(name)
    entry = Entry(id=doc_id(url), url=url, root=ROOT, depth=name.count("/"), size=len(content),
                  mtime_ns=1_700_000_000_123_456_789, identity="", content=None, mimetype="", outlinks=[],
                  etag="", http_last_modified="", source_url="", link_text="")
    return make_document(RawDocument(entry, mimetype, content.encode(), ""), Prepared(title=title, content=content),
                         PrepareOptions((), "fingerprint-1", 2**20, 1000))


def build_index(path) -> EmbeddedIndex:
    index = EmbeddedIndex(str(path))
    index.prepare()
    assert index.upsert([make_doc(name, *fields) for name, fields in DOCS.items()]) == []
    return index


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    index = build_index(tmp_path_factory.mktemp("index") / "sub" / "index.sqlite")
    yield index
    index.close()


def found(index: EmbeddedIndex, text: str) -> set[str]:
    return {hit.url[len(ROOT) + 1:] for hit in index.search(parse_query(text), limit=100)}


@pytest.mark.parametrize("text, expected", [
    ("spectrometer calibration", {"lab/calibration.txt", "lab/notes.txt"}),  # every word required
    ("spectrometer lamp", {"lab/notes.txt"}),
    ("SPECTROMETER Lamp", {"lab/notes.txt"}),
    ("polar bear", {"labs/polar.txt", "labs/sighting.html"}),
    ('"polar bear"', {"labs/polar.txt"}),
    ("calib*", {"lab/calibration.txt", "lab/notes.txt"}),
    ("spectrometer -calibration", {"budget.csv", "manual.pdf"}),
    ('bear -"polar bear"', {"labs/sighting.html"}),
    ("spectrometer -calib*", {"budget.csv", "manual.pdf"}),
    ("spectrometer extension:csv", {"budget.csv"}),
    ("spectrometer extension:.CSV", {"budget.csv"}),
    ("spectrometer -extension:csv", {"lab/calibration.txt", "lab/notes.txt", "manual.pdf"}),
    ("spectrometer mimetype:text/*", {"lab/calibration.txt", "lab/notes.txt", "budget.csv"}),
    ("spectrometer -mimetype:text/*", {"manual.pdf"}),
    ("mimetype:application/pdf", {"manual.pdf"}),
    ("mimetype:text/* -spectrometer -polar", {"rules/a.txt", "rules/b.txt"}),  # filters and exclusions only
    ("path:/srv/docs/lab", {"lab/calibration.txt", "lab/notes.txt"}),  # not /srv/docs/labs/
    ("path:/srv/docs/lab/", {"lab/calibration.txt", "lab/notes.txt"}),
    ("bear -path:/srv/docs/lab", {"labs/polar.txt", "labs/sighting.html"}),
    ("url:file:///srv/docs/labs/", {"labs/polar.txt", "labs/sighting.html"}),
    ("centrifuge", {"rules/a.txt", "rules/b.txt"}),  # title or content
    ("calibration.txt", {"lab/calibration.txt"}),  # the file name is searchable
    ("spectrometer OR centrifuge", {"lab/calibration.txt", "lab/notes.txt", "budget.csv", "manual.pdf",
                                    "rules/a.txt", "rules/b.txt"}),
    ("lamp OR centrifuge spectrometer", {"lab/notes.txt"}),
    ("mimetype:text/[hp]*", set()),  # only * is a wildcard: [hp] is two brackets and two letters
    ("mimetype:text/?tml", set()),
    ("lab/calibration", {"lab/calibration.txt"}),  # a phrase: "lab calibration" in the URL
    ("ibrat*", set()),  # a prefix, not a substring
    ("nonexistentword", set()),
])
def test_search(index, text, expected):
    assert found(index, text) == expected


def test_punctuation_only_word_does_not_empty_the_result(index):
    # BUG (transforms/index/sqlite.py, _fts_expression): a word without letters or digits, such as "&" in
    # "spectrometer & calibration", becomes the FTS5 phrase "&", which has no tokens and matches no row,
    # so AND-ing it empties every result. Such words should be dropped (as "-" and "*" already are).
    assert found(index, "spectrometer & calibration") == {"lab/calibration.txt", "lab/notes.txt"}


def test_snippet_escapes_html_and_marks_matches(index):
    (hit,) = index.search(parse_query("sighting"), limit=10)
    assert "&lt;script&gt;" in hit.snippet_html and "<script>" not in hit.snippet_html
    assert "<mark>sighting</mark>" in hit.snippet_html
    assert "<script>" in hit.snippet and "<mark>" not in hit.snippet


def test_hit_fields(index):
    (hit,) = index.search(parse_query('"optical bench"'), limit=10)
    assert hit.url == url_of("lab/calibration.txt")
    assert hit.title == "calibration.txt"  # no title: the file name
    assert (hit.mimetype, hit.size) == ("text/plain", len(DOCS["lab/calibration.txt"][2]))
    assert hit.last_modified == "2023-11-14T22:13:20.123+00:00"
    assert hit.score > 0


def test_title_weighs_more_than_content(index):
    hits = index.search(parse_query("centrifuge"), limit=10)
    assert [h.title for h in hits] == ["Centrifuge", "Machine rules"]
    assert hits[0].score > hits[1].score


def test_limit(index):
    assert len(index.search(parse_query("spectrometer"), limit=2)) == 2


def test_filter_only_query_lists_documents_by_url(index):
    hits = index.search(parse_query("path:/srv/docs/rules"), limit=10)
    assert [h.url for h in hits] == [url_of("rules/a.txt"), url_of("rules/b.txt")]
    assert hits[0].snippet == DOCS["rules/a.txt"][2]


def test_upsert_same_id_twice_keeps_one_document(tmp_path):
    index = build_index(tmp_path / "index.sqlite")
    before = index.count()
    index.upsert([make_doc("lab/notes.txt", content="the lamp was replaced yesterday")])
    assert index.count() == before == len(DOCS)
    assert found(index, "overdue") == set()
    assert found(index, "replaced yesterday") == {"lab/notes.txt"}
    assert found(index, "lamp") == {"lab/notes.txt"}
    index.close()


def test_one_batch_with_a_document_twice_keeps_its_last_version(tmp_path):
    """A batch's texts are written before its rows (EmbeddedIndex._write): a document twice in one batch, new
    or indexed, in another access partition the second time, ends as its second version only."""
    index = build_index(tmp_path / "index.sqlite")
    first, second = make_doc("new.txt", content="walrus tusks"), make_doc("new.txt", content="narwhal horn")
    moved = make_doc("lab/notes.txt", content="the lamp was replaced yesterday")._replace(groups=["staff"])
    assert index.upsert([first, moved, second, make_doc("lab/notes.txt", content="lamp bulbs ordered"), moved]) == []
    assert index.count() == len(DOCS) + 1
    assert found(index, "walrus") == found(index, "bulbs") == set()
    assert found(index, "narwhal") == {"new.txt"}
    db = index._connect()
    texts = db.execute("SELECT count(*) FROM docs_fts").fetchone()[0]
    ranked = db.execute("SELECT sum(docs) FROM ranking").fetchone()[0]
    assert texts == ranked == len(DOCS) + 1
    assert db.execute("SELECT groups FROM docs WHERE url = ?", (moved.url,)).fetchone() == ('["staff"]',)
    index.close()


def test_delete_removes_from_search(tmp_path):
    index = build_index(tmp_path / "index.sqlite")
    index.delete([doc_id(url_of("lab/notes.txt")), doc_id("file:///not/indexed")])
    assert index.count() == len(DOCS) - 1
    assert found(index, "spectrometer calibration") == {"lab/calibration.txt"}
    assert found(index, "lamp") == set()
    index.delete([])
    assert index.count() == len(DOCS) - 1
    index.close()


def test_snapshot_returns_every_document(index):
    splits = index.snapshot_splits()
    entries = [e for split in splits for e in index.read_snapshot(split)]
    assert sorted(e.url for e in entries) == sorted(url_of(n) for n in DOCS)
    assert {e.id for e in entries} == {doc_id(url_of(n)) for n in DOCS}
    entry = next(e for e in entries if e.url == url_of("budget.csv"))
    assert (entry.size, entry.mtime_ns, entry.prep_fingerprint) == (
        len(DOCS["budget.csv"][2]), 1_700_000_000_123_456_789, "fingerprint-1")
    assert len(entry.content_hash) == 64


def test_snapshot_of_an_empty_index(tmp_path):
    index = EmbeddedIndex(str(tmp_path / "empty.sqlite"))
    index.prepare()
    assert index.snapshot_splits() == []
    assert index.count() == 0


def test_index_survives_pickling_and_reopening(index):
    copy = pickle.loads(pickle.dumps(index))
    assert copy.path == index.path
    assert found(copy, "lamp") == {"lab/notes.txt"}
    copy.prepare()  # preparing an existing index of the right version is harmless
    assert copy.count() == len(DOCS)
    copy.close()


def test_schema_version_mismatch(tmp_path):
    path = tmp_path / "old.sqlite"
    EmbeddedIndex(str(path)).prepare()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(IndexUnavailable, match="schema version 99"):
        EmbeddedIndex(str(path)).prepare()


def test_check_refuses_missing_and_foreign_files(tmp_path):
    with pytest.raises(IndexUnavailable, match="no index here yet"):
        EmbeddedIndex(str(tmp_path / "missing.sqlite")).check()
    foreign = tmp_path / "notes.sqlite"
    foreign.write_text("just some text, not a database\n" * 100)
    with pytest.raises(IndexUnavailable, match="not a beamtrawl index"):
        EmbeddedIndex(str(foreign)).check()


def test_a_query_starting_with_a_dash(index, tmp_path):
    """``search '-calibration spectrometer'`` is a query, as with ``--`` (it was "unrecognized arguments")."""
    config = tmp_path / "crawl.yaml"
    config.write_text(f"start:\n  - url: /srv/docs\nindex:\n  path: {index.path}\n", encoding="utf-8")
    answers = []
    for args in (["-calibration spectrometer", "--config", str(config)],
                 ["--config", str(config), "-calibration spectrometer", "--limit", "5"],
                 ["--config", str(config), "--", "-calibration spectrometer"]):
        done = beamtrawl("search", "--json", *args, check_dac=False)
        assert done.returncode == 0, done.stderr
        answers.append(sorted(hit["url"][len(ROOT) + 1:] for hit in json.loads(done.stdout)))
    assert answers == [["budget.csv", "manual.pdf"]] * 3


def test_an_exact_name_outranks_a_partial_one(tmp_path):
    """The document named like the query comes first, however often others repeat the word."""
    index = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    index.prepare()
    index.upsert([make_doc("asyncio-subprocess.html", "text/html", "Subprocesses — Python documentation",
                           "subprocess " * 50),
                  make_doc("subprocess.html", "text/html", "subprocess — Subprocess management — Python",
                           "Spawn new processes with the subprocess module. " + "pipes and return codes " * 50),
                  make_doc("annual_numbat_summary.txt", content="numbat counts, annual numbat summary " * 20),
                  make_doc("numbats.txt", content="the annual summary of numbat sightings")])
    assert [h.url for h in index.search(parse_query("subprocess"), 10)] == [
        url_of("subprocess.html"), url_of("asyncio-subprocess.html")]
    def first(text: str) -> str:
        return index.search(parse_query(text), 10)[0].url

    assert first("Subprocess management") == url_of("subprocess.html")
    assert first("annual numbat summary") == url_of("annual_numbat_summary.txt")
    assert first("numbats") == url_of("numbats.txt")
    index.close()


NO_WORDS = "the query has no words or filters to search for"


@pytest.mark.parametrize("text, expected", [
    ("NEAR(spectrometer lamp)", set()),  # FTS5's NEAR would find lab/notes.txt; as words, "near" is required
    ("spectrometer AND NOT calibration", set()),  # FTS5's operators would find budget.csv and manual.pdf
    ("polar NEAR bear", set()),
    ("^polar", {"labs/polar.txt", "labs/sighting.html"}),  # FTS5's ^ (first word) would find nothing
    ("{polar bear}", {"labs/polar.txt", "labs/sighting.html"}),  # not a column set
    ('"polar bear', {"labs/polar.txt"}),  # an unterminated phrase runs to the end
    ("(polar", {"labs/polar.txt", "labs/sighting.html"}),
    ("title:bear^3", set()),  # not a column filter nor a boost: the words title, bear and 3
    ("lamp~2", set()),  # no fuzziness: the words lamp and 2
    ("col:", set()),
    ("lamp'; DROP TABLE docs; --", set()),
    ("lamp\x00", {"lab/notes.txt"}),  # a NUL ended FTS5's string: "not a beamtrawl index (unterminated string)"
    ("💥 lamp", {"lab/notes.txt"}),
    ("\\", NO_WORDS), ("\x00", NO_WORDS), ("* OR *", NO_WORDS),
    ("a" * 5000, "the query is too long (5,000 characters; at most 1,000)"),
])
def test_hostile_queries_are_words(index, text, expected):
    """Nothing the user types reaches FTS5's own syntax: a query finds what its words find, or is refused
    with one sentence, and the index is as it was."""
    if isinstance(expected, str):
        with pytest.raises(QueryError) as refused:
            parse_query(text)
        assert str(refused.value) == expected
    else:
        assert found(index, text) == expected
    assert found(index, "spectrometer") == {"lab/calibration.txt", "lab/notes.txt", "budget.csv", "manual.pdf"}


def test_a_query_sqlite_cannot_run_is_too_complex_not_a_broken_index(index):
    """Past parse_query's bounds (a Query built by hand), SQLite's own limit blames the query."""
    query = Query(clauses=[(Term("select"),)], excluded=[Term(f"w{n}") for n in range(3000)])
    with pytest.raises(QueryError, match="the query is too complex .*Expression tree is too large"):
        index.search(query, limit=10)
    assert found(index, "spectrometer")  # the index is as it was


def test_a_version_2_index_gets_its_name_keys_when_a_crawl_opens_it(tmp_path):
    index = build_index(tmp_path / "index.sqlite")
    index.upsert([make_doc("subprocess.html", "text/html", "subprocess — Python", "see the subprocess module"),
                  make_doc("asyncio-subprocess.html", "text/html", "", "subprocess " * 30)])
    db = sqlite3.connect(index.path)
    db.execute("DROP TABLE names")  # what version 2 looked like
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    index.close()
    with pytest.raises(IndexUnavailable, match="schema version 2"):
        EmbeddedIndex(index.path).check()
    index.prepare()  # what a crawl does first
    assert index.search(parse_query("subprocess"), 10)[0].url == url_of("subprocess.html")
    index.close()


def test_searching_an_index_that_holds_nothing_yet(tmp_path, make_config, crawl):
    """A crawl of an empty folder prepares the index without writing a row; FTS5's statistics record is
    then empty, and a search says so instead of failing."""
    (tmp_path / "empty").mkdir()
    config = make_config(tmp_path / "empty")
    assert crawl(config).code == 0
    found = beamtrawl("search", "wombat", "--config", str(config))
    assert (found.returncode, found.stdout.strip()) == (0, "no documents found"), found.stderr
