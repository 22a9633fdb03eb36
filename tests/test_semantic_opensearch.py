"""Search by meaning on OpenSearch (issue 31): passages as nested ``knn_vector`` rows (the k-NN plugin, Lucene
engine) on the real test node, with the pages of Python's library reference of tests/test_semantic.py; the
questions, passages, filters and more like this of the embedded index, and issue 15's score-leak tests repeated
for semantic and hybrid scores. One alias per kind of content, filled once for the module."""

from __future__ import annotations

import base64

import pytest
from beamtrawl.transforms.embed import WordLlamaSettings, load_model
from beamtrawl.transforms.index import opensearch_vectors as knn
from beamtrawl.transforms.index import semantic
from beamtrawl.transforms.index.opensearch import OpenSearchIndex
from beamtrawl.transforms.urls import doc_id

from tests.conftest import unique_index_name
from tests.test_semantic import (
    PAGES,
    QUESTION,
    _embedded,
    _finds_the_page_and_shows_the_passage,
    _page,
    _page_of,
    _places,
    _scores,
)


def _alias(url, name, docs):
    target = OpenSearchIndex(url, unique_index_name(__name__, name))
    target.prepare()
    target.snapshot_splits()
    assert target.upsert(docs) == []
    target.finish(succeeded=True)
    return target


@pytest.fixture(scope="module")
def model():
    return load_model(WordLlamaSettings())


@pytest.fixture(scope="module")
def docs():
    """(the public pages, the group staff's), embedded, as tests/test_semantic.py makes them."""
    staff = ("subprocess.html", "os.html", "shutil.html")
    return _embedded([_page(name) for name in PAGES]), _embedded([_page(name, ["staff"], "staff") for name in staff])


@pytest.fixture(scope="module")
def public_docs(docs):
    return docs[0]


@pytest.fixture(scope="module")
def hidden_docs(docs):
    return docs[1]


@pytest.fixture(scope="module")
def aliases(opensearch, public_docs, hidden_docs):
    """public: what a public searcher may see; everything: that, staff's pages and board's; staff: what staff
    may see, as public documents."""
    board = _embedded([_page("json.html", ["board"], "board")])
    made = {"public": _alias(opensearch, "public", public_docs),
            "everything": _alias(opensearch, "everything", public_docs + hidden_docs + board),
            "staff": _alias(opensearch, "staff", public_docs + [d._replace(groups=[]) for d in hidden_docs])}
    yield made
    for target in made.values():
        target.close()


def test_a_question_finds_the_page_shows_the_passage_and_filters_hold(aliases, model):
    index = aliases["public"]
    _finds_the_page_and_shows_the_passage(index, model)
    assert _page_of(index, "launch program await termination", semantic.AUTO, model).hits[0].url.endswith(
        "subprocess.html")
    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        page = _page_of(index, f"{QUESTION} -popen", mode, model)
        assert page.hits and not any(h.url.endswith("/subprocess.html") for h in page.hits), mode
        narrowed = _page_of(index, f"{QUESTION} url:file:///srv/library/c", mode, model)
        assert [h.url.rsplit("/", 1)[1] for h in narrowed.hits] == ["csv.html"], mode
        assert narrowed.total == 1 and dict(narrowed.facets["extension"]) == {"html": 1}


def test_semantic_scores_are_the_embedded_indexs_cosines(aliases, public_docs, model, tmp_path):
    from tests.test_semantic import _new

    embedded = _new(tmp_path, public_docs)
    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        ours, theirs = _page_of(aliases["public"], QUESTION, mode, model), _page_of(embedded, QUESTION, mode, model)
        assert [h.url for h in ours.hits][:3] == [h.url for h in theirs.hits][:3], mode
        if mode == semantic.SEMANTIC:  # float16 vectors on both sides: the same cosines, to a few thousandths
            assert _scores(ours) == pytest.approx(_scores(theirs), abs=5e-3)
    embedded.close()


def test_more_like_this_and_export_keep_the_vectors(aliases, public_docs):
    index = aliases["public"]
    page = _page_of(index, "", semantic.AUTO, None, like=doc_id("file:///srv/library/subprocess.html"))
    urls = [h.url.rsplit("/", 1)[1] for h in page.hits]
    assert "subprocess.html" not in urls and urls[0] == "asyncio-subprocess.html"
    assert _page_of(index, "", semantic.AUTO, None, like="no such id").total == 0
    exported = {d.id: d for d in index.documents()}
    assert all(exported[d.id].vectors == d.vectors and list(exported[d.id].passages) == list(d.passages)
               for d in public_docs)


# -- access: issue 15's score-leak tests, for vector and fused scores ------------------------------------------

@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_hidden_documents_do_not_move_a_public_searchers_hits_scores_or_counts(aliases, model, mode):
    for text in (QUESTION, "encode a dictionary as text"):
        alone, beside = _page_of(aliases["public"], text, mode, model), _page_of(aliases["everything"], text, mode, model)
        assert _scores(beside) == _scores(alone) and beside.total == alone.total and beside.facets == alone.facets
    staff = _page_of(aliases["everything"], QUESTION, mode, model, groups=["staff"])
    assert any("/staff/" in url for url in _places(staff)) and not any("/board/" in url for url in _places(staff))


@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_a_group_searcher_scores_as_in_an_index_of_what_it_may_see(aliases, model, mode):
    for text in (QUESTION, "encode a dictionary as text"):
        seen = _page_of(aliases["everything"], text, mode, model, groups=["staff"])
        reference = _page_of(aliases["staff"], text, mode, model)
        assert _scores(seen) == pytest.approx(_scores(reference), abs=1e-4)
        assert seen.total == reference.total and seen.facets == reference.facets
        assert not any("/board/" in url for url in _places(seen))


def test_access_changes_and_deletes_move_the_vectors_too(opensearch, public_docs, hidden_docs, model):
    target = _alias(opensearch, "moves", public_docs[:2] + hidden_docs[:2])
    staff_subprocess = hidden_docs[0]
    assert not any("/staff/" in url for url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model)))
    target.set_access([(staff_subprocess.id, [], []), (public_docs[0].id, list(public_docs[0].groups), [])])
    target.client.indices.refresh(index=target.name)
    assert staff_subprocess.url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    assert public_docs[0].url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))  # kept its rows
    target.delete([staff_subprocess.id])
    target.client.indices.refresh(index=target.name)
    assert staff_subprocess.url not in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    assert _page_of(target, "", semantic.AUTO, None, like=hidden_docs[1].id).total == 0  # hidden: not even like it
    target.close()


def test_damaged_vectors_are_passed_over_not_a_failed_search(opensearch, public_docs, model):
    damaged = [public_docs[0]._replace(vectors=public_docs[0].vectors[:-3]),
               public_docs[1]._replace(vectors=b"\xff\x7f" * (len(public_docs[1].vectors) // 2))]  # NaN rows
    target = _alias(opensearch, "damaged", damaged + public_docs[2:4])
    target.client.indices.refresh(index=target.name)
    page = _page_of(target, QUESTION, semantic.SEMANTIC, model)
    assert {h.url for h in page.hits} == {d.url for d in public_docs[2:4]}
    assert base64.b64decode(knn.stored([0, 1], b"\0\0")["vectors"]) == b"\0\0"
    target.close()


def test_a_public_document_moved_to_a_group_takes_its_vectors_out_of_public_search(opensearch, public_docs, model):
    """Its rows move with it: a public searcher no longer finds it, nor anything like it, by meaning; its group
    does."""
    target = _alias(opensearch, "hidden-later", public_docs[:3])
    moved = public_docs[0]
    assert moved.url in _places(_page_of(target, QUESTION, semantic.SEMANTIC, model))
    target.set_access([(moved.id, ["staff"], [])])
    target.client.indices.refresh(index=target.name)
    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        assert moved.url not in _places(_page_of(target, QUESTION, mode, model))
        assert moved.url in _places(_page_of(target, QUESTION, mode, model, groups=["staff"]))
    assert _page_of(target, "", semantic.AUTO, None, like=moved.id).total == 0
    assert _page_of(target, "", semantic.AUTO, None, like=moved.id, groups=["staff"]).total > 0
    target.close()


@pytest.mark.parametrize("text", ["?!…", "подпроцесс запуск", "进程 " * 300, "a" * 1000, "🐍 " * 40, "\u200b\ufeff"])
def test_odd_questions_are_a_page_or_a_message_not_a_failure(aliases, model, text):
    from beamtrawl.transforms.index.query import QueryError

    for mode in (semantic.SEMANTIC, semantic.HYBRID):
        try:
            page = _page_of(aliases["public"], text, mode, model)
        except QueryError:  # serve shows its message
            continue
        assert page.total >= 0 and all(hit.url for hit in page.hits)
