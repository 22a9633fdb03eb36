"""Questions and search by meaning (issue 31) on the embedded index, with pages of Python's library reference as
Debian ships them (tests/package_files.py): passages kept with their title and heading, embedded offline,
stored beside the text; keyword, semantic, hybrid and auto modes; the passage a hit shows; more like this; the
score-leak tests of issue 15 repeated for semantic and hybrid scores; the configuration and the crawl."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import urllib.parse

import pytest
import yaml
from beamtrawl.pipeline.config import load_config
from beamtrawl.pipeline.config.loader import ConfigError
from beamtrawl.pipeline.crawl import preparation_fingerprint
from beamtrawl.transforms.embed import WordLlamaSettings, load_model
from beamtrawl.transforms.embed.passages import passages
from beamtrawl.transforms.embed.stage import _Embed
from beamtrawl.transforms.index import EmbeddedIndex, semantic, sqlite_vectors, vector_lists
from beamtrawl.transforms.index.query import QueryError, asking
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, IndexDoc, RawDocument
from beamtrawl.transforms.urls import doc_id

from tests.package_files import python_library_docs
from tests.serve_site import Site, api, get, served

PAGES = ("subprocess.html", "asyncio-subprocess.html", "csv.html", "json.html", "tempfile.html", "shutil.html",
         "hashlib.html", "secrets.html", "random.html", "zipfile.html", "os.html", "argparse.html")
QUESTION = "run a shell command and capture its output"


def _page(name: str, groups=(), where: str = "library"):
    data = (python_library_docs() / name).read_bytes()
    url = f"file:///srv/{where}/{name}"
    entry = Entry(doc_id(url), url, "file:///srv", 1, len(data), 0, "", None, "", [], "", "", "", "", list(groups))
    return make_document(RawDocument(entry, "text/html", data, ""), prepare_html(data, url, "text/html", {}),
                         PrepareOptions((), "fp", 2**26, 1000))


def _embedded(docs):
    stage = _Embed(WordLlamaSettings())
    stage.setup()
    return [out for out in stage._embed(docs) if isinstance(out, IndexDoc)]


@pytest.fixture(scope="module")
def model():
    return load_model(WordLlamaSettings())


@pytest.fixture(scope="module")
def public_docs():
    return _embedded([_page(name) for name in PAGES])


@pytest.fixture(scope="module")
def hidden_docs():
    """Pages near the question's meaning that only the group staff may see."""
    return _embedded([_page(name, ["staff"], "staff") for name in ("subprocess.html", "os.html", "shutil.html")])


@pytest.fixture(scope="module")
def index(tmp_path_factory, public_docs):
    target = EmbeddedIndex(str(tmp_path_factory.mktemp("semantic") / "index.sqlite"))
    target.prepare()
    assert target.upsert(public_docs) == []
    yield target
    target.close()


def _new(tmp_path, docs, name="index.sqlite"):
    target = EmbeddedIndex(str(tmp_path / name))
    target.prepare()
    assert target.upsert(docs) == []
    return target


def _page_of(target, text, mode, model, groups=(), like=""):
    return semantic.search_page(target, asking(text, (), groups, like, mode), model.embed if model else None, 20,
                                facet_size=5)


def _places(page) -> list[str]:
    """Every URL a page shows: its hits and their copies (the hidden pages are copies of public ones)."""
    return [url for hit in page.hits for url in (hit.url, *hit.locations)]


def _scores(page) -> dict[str, float]:
    return {hit.url.rsplit("/", 1)[1]: hit.score for hit in page.hits}


# -- passages and the model -----------------------------------------------------------------------------------

def test_passages_carry_the_title_and_the_heading_above_them():
    doc = _page("subprocess.html")
    spans, texts = passages(doc.title, doc.headlines, doc.content, 80, 200)
    assert len(spans) == len(texts) > 20
    assert all(text.startswith(doc.title) for text in texts)
    heading, following = doc.content.index("\nPopen Constructor\n"), doc.content.index("\nExceptions\n")
    under = [text for (start, _), text in zip(spans, texts, strict=True) if heading < start < following]
    assert under and under[0].startswith(f"{doc.title} — Popen Constructor: ")
    assert all(doc.content[start:stop].strip() for start, stop in spans)


def test_the_bounds_and_a_document_without_text():
    assert len(passages("t", "", "word " * 10_000, 50, 7)[0]) == 7
    assert passages("Only a title", "", "", 80, 200) == ([(0, 0)], ["Only a title"])
    assert passages("", "", " \n ", 80, 200) == ([], [])


def test_the_model_loads_and_embeds_without_a_network():
    """wordllama's bundled model, read from its wheel: in a network namespace with no route at all (``unshare``
    comes with util-linux, which tests/run.sh installs; the suite runs as root, who may make the namespace)."""
    probe = ("from beamtrawl.transforms.embed import WordLlamaSettings, load_model; "
             "v = load_model(WordLlamaSettings()).embed(['a question']); print(v.shape, round(float((v**2).sum()), 3))")
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(1,", "256)", "1.0"]


# -- searching ------------------------------------------------------------------------------------------------

def _finds_the_page_and_shows_the_passage(index, model) -> None:
    """The question's page first in every mode by meaning, its hit's snippet a passage of its text (both targets)."""
    for mode in (semantic.SEMANTIC, semantic.HYBRID, semantic.AUTO):
        page = _page_of(index, QUESTION, mode, model)
        assert page.hits[0].url.endswith("/subprocess.html"), mode
        assert page.total == len({h.url for h in page.hits}) <= semantic.DEPTH
        content = next(d.content for d in index.documents() if d.url == page.hits[0].url)
        shown = page.hits[0].snippet.rstrip("…")
        assert shown and " ".join(shown.split()) in " ".join(content.split()), mode


def test_a_question_finds_the_page_that_answers_it_and_shows_the_passage(index, model):
    assert _page_of(index, QUESTION, semantic.KEYWORD, model).hits[0].url.endswith("/subprocess.html")
    _finds_the_page_and_shows_the_passage(index, model)


def test_questions_words_finds_nothing_by_keywords_auto_falls_back_to_hybrid(index, model):
    text = "launch program await termination"
    assert _page_of(index, text, semantic.KEYWORD, model).total == 0
    assert _page_of(index, text, semantic.AUTO, model).hits[0].url.endswith("subprocess.html")


def test_auto_keeps_keyword_like_queries_as_keywords(index, model):
    for text in ("subprocess", "csv", "mimetype:text/html json"):
        assert semantic.settled(asking(text), model.embed) is None  # keywords first
        assert _scores(_page_of(index, text, semantic.AUTO, model)) == _scores(
            _page_of(index, text, semantic.KEYWORD, model)), text
    assert semantic.is_question("how do I copy a folder?")
    assert not semantic.is_question('"copy a folder" -draft')


def test_a_hybrid_searchs_keywords_leave_out_the_words_many_documents_hold(index):
    """Every word is required by keywords: a question's common words ("a", "and", "its") would find little and read
    long posting lists (issue 31), so the keyword half keeps the words at most COMMON_SHARE of the documents hold."""
    from beamtrawl.transforms.index import sqlite
    from beamtrawl.transforms.index import sqlite_parts as parts

    db = index._reader()
    question = asking("how do I run a subprocess and capture its stdout with check_returncode", mode=semantic.HYBRID)
    kept = [clause[0].text for clause in sqlite._telling(db, question).clauses]
    documents = index.count()
    for word in ("how", "do", "I", "run", "a", "subprocess", "and", "capture", "its", "stdout", "with",
                 "check_returncode"):
        holding = sum(db.execute(f"SELECT count(*) FROM {parts.fts(n)} WHERE {parts.fts(n)} MATCH ?",
                                 (f'"{word}"',)).fetchone()[0] for n in parts.all_parts(db))
        assert (word in kept) == (holding <= semantic.COMMON_SHARE * documents), (word, holding)
    assert kept == ["check_returncode"]  # the one word of a single page (subprocess.html) here


def test_filters_and_exclusions_hold_in_semantic_and_hybrid_searches(index, model):
    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        page = _page_of(index, f"{QUESTION} -popen", mode, model)
        assert page.hits and not any(h.url.endswith("/subprocess.html") for h in page.hits), mode
        narrowed = _page_of(index, f"{QUESTION} url:file:///srv/library/c", mode, model)
        assert [h.url.rsplit("/", 1)[1] for h in narrowed.hits] == ["csv.html"], mode
        assert narrowed.total == 1 and dict(narrowed.facets["extension"]) == {"html": 1}


def test_more_like_this_finds_neighbours_but_not_the_document_itself(index, model):
    subprocess_id = doc_id("file:///srv/library/subprocess.html")
    page = _page_of(index, "", semantic.AUTO, None, like=subprocess_id)
    urls = [h.url.rsplit("/", 1)[1] for h in page.hits]
    assert "subprocess.html" not in urls and urls[0] == "asyncio-subprocess.html"
    assert _page_of(index, "", semantic.AUTO, None, like="no such id").total == 0


def test_semantic_without_a_model_is_one_line_and_an_index_without_vectors_finds_nothing(tmp_path, index, model):
    with pytest.raises(QueryError, match="embeds nothing"):
        _page_of(index, QUESTION, semantic.SEMANTIC, None)
    assert _page_of(index, QUESTION, semantic.AUTO, None).hits[0].url.endswith("subprocess.html")  # keywords
    bare = _new(tmp_path, [_page("csv.html")])
    assert _page_of(bare, QUESTION, semantic.SEMANTIC, model).total == 0
    bare.close()


# -- access: issue 15's score-leak tests, for vector and fused scores ------------------------------------------

@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_hidden_documents_do_not_move_a_public_searchers_hits_scores_or_counts(tmp_path, public_docs, hidden_docs,
                                                                               model, mode):
    target = _new(tmp_path, public_docs)
    before = _page_of(target, QUESTION, mode, model)
    assert target.upsert(hidden_docs) == []
    after = _page_of(target, QUESTION, mode, model)
    assert _scores(after) == _scores(before) and after.total == before.total and after.facets == before.facets
    staff = _page_of(target, QUESTION, mode, model, groups=["staff"])
    assert any("/staff/" in url for url in _places(staff))
    target.close()


@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_a_group_searcher_scores_as_in_an_index_of_what_it_may_see(tmp_path, public_docs, hidden_docs, model, mode):
    everything = _new(tmp_path, public_docs + hidden_docs + _embedded([_page("json.html", ["board"], "board")]))
    seen_by_staff = _new(tmp_path, public_docs + [d._replace(groups=[]) for d in hidden_docs], "staff.sqlite")
    for text in (QUESTION, "encode a dictionary as text"):
        seen = _page_of(everything, text, mode, model, groups=["staff"])
        reference = _page_of(seen_by_staff, text, mode, model)
        assert _scores(seen) == pytest.approx(_scores(reference), abs=1e-4)
        assert seen.total == reference.total and not any("/board/" in url for url in _places(seen))
    everything.close()
    seen_by_staff.close()


def test_access_changes_and_deletes_move_the_vectors_too(tmp_path, public_docs, hidden_docs, model):
    target = _new(tmp_path, public_docs + hidden_docs)
    staff_subprocess = hidden_docs[0]
    assert not any("/staff/" in url for url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model)))
    target.set_access([(staff_subprocess.id, [], [])])
    assert staff_subprocess.url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    target.delete([staff_subprocess.id])
    assert staff_subprocess.url not in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    assert _page_of(target, "", semantic.AUTO, None, like=hidden_docs[1].id).total == 0  # hidden: not even like it
    target.close()


def test_an_index_of_schema_version_6_gets_the_vectors_table_once(tmp_path):
    path = tmp_path / "old.sqlite"
    target = _new(tmp_path, [_page("csv.html")], "old.sqlite")
    target.close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE vectors")
        db.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    target = EmbeddedIndex(str(path))
    target.prepare()
    target.check()
    assert target.count() == 1
    target.close()


# -- configuration and the crawl -----------------------------------------------------------------------------

def _config(tmp_path, **settings):
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": str(tmp_path / "docs")}],
                                    "index": {"path": str(tmp_path / "index.sqlite")}, **settings}))
    return path


@pytest.mark.parametrize(("section", "says"), [
    ({"model": "wordlama"}, "embeddings.model: must be one of wordllama, got 'wordlama'"),
    ({"model": "wordllama", "passage_words": 2}, "embeddings.passage_words: must be at least 8"),
    ({"model": "wordllama", "dims": 3}, "embeddings.dims: unknown key"),
    ("yes", "embeddings: must be a mapping with a model"),
])
def test_a_bad_embeddings_section_is_one_line_naming_the_key(tmp_path, section, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace("[", r"\[")):
        load_config(str(_config(tmp_path, embeddings=section)))


def test_the_model_and_its_version_join_the_fingerprint_only_when_on(tmp_path):
    off = load_config(str(_config(tmp_path)))
    assert off.embeddings is None and load_config(str(_config(tmp_path, embeddings=False))).embeddings is None
    on = load_config(str(_config(tmp_path, embeddings={"model": "wordllama"})))
    longer = load_config(str(_config(tmp_path, embeddings={"model": "wordllama", "passage_words": 120})))
    prints = {preparation_fingerprint(c.preparators, c) for c in (off, on, longer)}
    assert len(prints) == 3


def test_a_crawl_embeds_new_and_changed_documents_only_and_search_answers_questions(tmp_path, crawl):
    config = _config(tmp_path, embeddings={"model": "wordllama"})
    for name in ("subprocess.html", "csv.html", "json.html"):
        shutil.copy(python_library_docs() / name, tmp_path / "docs" / name)
    first = crawl(config)
    assert first.code == 0, first.stderr[-2000:]
    assert first.counts["embedded"] == 3 and first.counts["not_embedded"] == 0
    (tmp_path / "docs" / "csv.html").touch()
    again = crawl(config)
    assert again.counts["embedded"] == 1 and again.counts["unchanged"] == 2
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "search", QUESTION, "--config",
                           str(config), "--mode", "semantic", "--json"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert hits[0]["url"].endswith("/subprocess.html") and hits[0]["snippet"]
    like = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "search", "--like", hits[0]["id"],
                           "--config", str(config), "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert like.returncode == 0, like.stderr
    assert [h["url"] for h in json.loads(like.stdout)] and hits[0]["url"] not in like.stdout
    users = tmp_path / "users.yaml"
    users.write_text("")
    with served(Site(tmp_path / "docs", config, users)) as base:
        found = api(base, QUESTION)  # auto: a question runs hybrid
        assert found["mode"] == "auto" and found["hits"][0]["url"].endswith("/subprocess.html")
        similar = api(base, "", like=found["hits"][0]["id"])
        assert similar["total"] and found["hits"][0]["url"] not in {h["url"] for h in similar["hits"]}
        status, _, page = get(f"{base}/?" + urllib.parse.urlencode({"q": QUESTION, "mode": "semantic"}))
        assert status == 200 and b"more like this" in page and b'<option value="semantic" selected>' in page
        for bad in ({"q": "x", "mode": "vector"}, {"like": "../etc"}, {"like": "f" * 65}):
            assert get(f"{base}/api/search?" + urllib.parse.urlencode(bad))[0] == 400, bad


def test_damaged_or_foreign_vectors_are_passed_over_not_a_failed_search(tmp_path, public_docs, model):
    """A row of another model's width and a truncated one: the search goes on with the others."""
    target = _new(tmp_path, public_docs)
    target.close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        subprocess_rid, os_rid = (db.execute("SELECT rid FROM docs WHERE url LIKE ?", (f"%/{name}",)).fetchone()[0]
                                  for name in ("subprocess.html", "os.html"))
        db.execute("UPDATE vectors SET vectors = substr(vectors, 1, 300), spans = x'0102' WHERE rid = ?",
                   (subprocess_rid,))
        db.execute("UPDATE vectors SET vectors = zeroblob(128 * 2 * 3) WHERE rid = ?", (os_rid,))
    target = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    urls = [h.url.rsplit("/", 1)[1] for h in _page_of(target, QUESTION, semantic.SEMANTIC, model).hits]
    assert urls and "subprocess.html" not in urls and "os.html" not in urls
    assert _page_of(target, "", semantic.AUTO, None, like=doc_id("file:///srv/library/subprocess.html")).total == 0
    target.close()


# -- vector lists (an IVF index per access partition): a large partition's search compares the nearest lists' -----

@pytest.fixture
def small_lists(monkeypatch):
    """Lists from 100 passages on, so that a dozen pages get them (a real index: from vector_lists.MIN_ROWS)."""
    monkeypatch.setattr(vector_lists, "MIN_ROWS", 100)
    monkeypatch.setattr(vector_lists, "PROBES", 4)


def _lists(target) -> dict[int, int]:
    return dict(target._reader().execute("SELECT part, count(*) FROM vector_list_rows GROUP BY part"))


def test_the_crawls_end_builds_lists_and_a_search_finds_what_the_exact_scan_finds(tmp_path, public_docs, model,
                                                                                   small_lists, monkeypatch):
    target = _new(tmp_path, public_docs)
    exact = {mode: _scores(_page_of(target, QUESTION, mode, model)) for mode in (semantic.SEMANTIC, semantic.HYBRID)}
    target.finish(True)
    passages = sum(len(d.passages) // 2 for d in public_docs)
    assert list(_lists(target).values()) == [vector_lists.list_count(passages)]
    assert target._reader().execute("SELECT sum(length(rids)) / 8 FROM vector_list_rows").fetchone()[0] == passages
    for mode, scores in exact.items():
        near = _scores(_page_of(target, QUESTION, mode, model))
        assert next(iter(near)) == "subprocess.html" and len(near) >= 3, mode
        if mode == semantic.SEMANTIC:  # a document's score is its best compared passage's cosine: the exact one
            assert next(iter(near.values())) == scores["subprocess.html"]
    narrowed = _page_of(target, f"{QUESTION} url:file:///srv/library/c", semantic.SEMANTIC, model)
    assert [h.url.rsplit("/", 1)[1] for h in narrowed.hits] == ["csv.html"]  # few admitted: all their passages
    monkeypatch.setattr(sqlite_vectors, "FEW_DOCUMENTS", 0)  # the lists' passages, refused documents' left out
    excluded = _page_of(target, f"{QUESTION} -popen", semantic.SEMANTIC, model)
    assert excluded.hits and not any(h.url.endswith("/subprocess.html") for h in excluded.hits)
    target.close()


def test_lists_are_never_used_stale_and_depend_on_nothing_hidden(tmp_path, public_docs, hidden_docs, model,
                                                                  small_lists):
    target = _new(tmp_path, public_docs)
    target.finish(True)
    before = {mode: _page_of(target, QUESTION, mode, model) for mode in (semantic.SEMANTIC, semantic.HYBRID)}
    assert target.upsert(hidden_docs) == []  # another partition: the public one's lists stay fresh
    target.finish(True)
    for mode, page in before.items():
        after = _page_of(target, QUESTION, mode, model)
        assert _scores(after) == _scores(page) and after.total == page.total and after.facets == page.facets
        assert any("/staff/" in url for url in _places(_page_of(target, QUESTION, mode, model, groups=["staff"])))
    copy = hidden_docs[0]._replace(id=doc_id("file:///srv/copy/subprocess.html"), url="file:///srv/copy/subprocess.html",
                                   groups=[])
    assert target.upsert([copy]) == []  # the public partition changed: searched exactly until the next crawl's end
    assert copy.url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    target.delete([copy.id])
    target.finish(True)
    assert _scores(_page_of(target, QUESTION, semantic.SEMANTIC, model)) == _scores(before[semantic.SEMANTIC])
    target.close()


def test_damaged_lists_or_an_index_without_them_are_searched_all_the_same(tmp_path, public_docs, model, small_lists):
    target = _new(tmp_path, public_docs)
    target.finish(True)
    target.close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        db.execute("UPDATE vector_list_rows SET vectors = substr(vectors, 1, 100)")
        db.execute("UPDATE vector_lists SET centroids = zeroblob(4 * 256 * 3)")  # wrong lists, right width
    target = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    assert _page_of(target, QUESTION, semantic.SEMANTIC, model).total == 0  # every probed list is damaged
    target.close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:  # written by a beamtrawl before lists: searched exactly
        for name in ("vectors_added", "vectors_removed", "vectors_changed"):
            db.execute(f"DROP TRIGGER {name}")
        for name in ("vector_lists", "vector_list_rows", "vector_changes"):
            db.execute(f"DROP TABLE {name}")
    target = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    assert _page_of(target, QUESTION, semantic.SEMANTIC, model).hits[0].url.endswith("/subprocess.html")
    target.prepare()  # the next crawl: its end builds the lists
    target.finish(True)
    assert _lists(target) and _page_of(target, QUESTION, semantic.SEMANTIC, model).hits[0].url.endswith(
        "/subprocess.html")
    target.close()


# -- the Delta table: by meaning only, exact cosines over the visible rows' vectors -----------------------------

def _table(tmp_path, docs, name="t.delta"):
    """A Delta table holding ``docs``, written as a crawl writes it (staged files, one commit)."""
    from beamtrawl.transforms.index.table import DeltaIndex

    target = DeltaIndex(str(tmp_path / name))
    target.prepare()
    target.upsert(docs)
    target.commit(target.take_staged())
    target.finish(succeeded=True)
    return DeltaIndex(str(tmp_path / name))


def _table_hits(target, text, mode, model, groups=(), like=""):
    run = semantic.settled(asking(text, (), groups, like, mode), model.embed)
    return target.search(run, 20)


def test_the_table_answers_a_question_by_meaning_and_shows_the_passage(tmp_path, public_docs, model):
    target = _table(tmp_path, public_docs)
    contents = {d.url: " ".join(d.content.split()) for d in public_docs}
    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        hits = _table_hits(target, QUESTION, mode, model)
        assert hits[0].url.endswith("/subprocess.html"), mode
        assert len({h.url for h in hits}) == len(hits) == len(public_docs)
        shown = hits[0].snippet.rstrip("…")
        assert shown and shown in contents[hits[0].url] and hits[0].id == doc_id(hits[0].url)
    # the same ranking as the embedded index's exact scan (float16 vectors there, float32 here)
    index = _new(tmp_path, public_docs)
    expected = [h.url for h in _page_of(index, QUESTION, semantic.SEMANTIC, model).hits]
    assert [h.url for h in _table_hits(target, QUESTION, semantic.SEMANTIC, model)][:5] == expected[:5]
    index.close()
    like = _table_hits(target, "", semantic.AUTO, model, like=hits[0].id)
    assert like and hits[0].url not in {h.url for h in like}
    with pytest.raises(Exception, match="searches by meaning only"):
        target.search(asking("subprocess", mode=semantic.KEYWORD), 10)
    with pytest.raises(QueryError, match="words only"):
        _table_hits(target, "shell extension:html", semantic.SEMANTIC, model)
    assert _table_hits(target, "shell OR subprocess*", semantic.HYBRID, model)  # no word the keywords can require


@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_a_tables_hidden_rows_move_nothing_a_searcher_sees(tmp_path, public_docs, hidden_docs, model, mode):
    """Issue 15's score-leak test on the table: a public searcher's hits and scores equal those of a table of the
    public documents alone; a staff searcher's those of a table where its documents are public; a hidden
    document is not even a "more like this" anchor."""
    alone = _table(tmp_path, public_docs, "public.delta")
    everything = _table(tmp_path, public_docs + hidden_docs, "all.delta")
    as_staff = _table(tmp_path, public_docs + [d._replace(groups=[]) for d in hidden_docs], "staff.delta")
    for text in (QUESTION, "encode a dictionary as text"):
        seen = _table_hits(everything, text, mode, model)
        assert [(h.url, h.score) for h in seen] == [(h.url, h.score) for h in _table_hits(alone, text, mode, model)]
        staff = _table_hits(everything, text, mode, model, groups=["staff"])
        reference = _table_hits(as_staff, text, mode, model)
        assert [(h.url, h.score) for h in staff] == [(h.url, h.score) for h in reference]
    assert any("/staff/" in url for h in _table_hits(everything, QUESTION, mode, model, groups=["staff"])
               for url in (h.url, *h.locations))
    assert _table_hits(everything, "", mode, model, like=hidden_docs[0].id) == []
    assert _table_hits(everything, "", mode, model, groups=["staff"], like=hidden_docs[0].id)


def test_a_crawl_into_a_table_answers_questions_on_the_command_line(tmp_path, crawl):
    config = tmp_path / "crawl.yaml"
    (tmp_path / "docs").mkdir()
    for name in ("subprocess.html", "csv.html", "json.html"):
        shutil.copy(python_library_docs() / name, tmp_path / "docs" / name)
    config.write_text(yaml.safe_dump({"start": [{"url": str(tmp_path / "docs")}], "index": {"table": "t.delta"},
                                      "embeddings": {"model": "wordllama"}}))
    done = crawl(config)
    assert done.code == 0, done.stderr[-2000:]

    def search(*args):
        return subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "search", *args, "--config",
                               str(config), "--json"], capture_output=True, text=True, timeout=120, check=False)
    for mode in ("auto", "hybrid", "semantic"):
        found = search(QUESTION, "--mode", mode)
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)
        assert hits[0]["url"].endswith("/subprocess.html") and hits[0]["snippet"], mode
    like = search("--like", hits[0]["id"])
    assert like.returncode == 0 and hits[0]["url"] not in like.stdout and json.loads(like.stdout)
    refused = search("subprocess", "--mode", "keyword")
    assert refused.returncode == 2 and "searches by meaning only" in refused.stderr
