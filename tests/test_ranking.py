"""Scores a searcher sees depend only on the documents it may see (issue 15, item 2): on the embedded
index and on a real OpenSearch node, a public searcher's scores are the same before and after hidden
documents arrive, and a group searcher's scores equal those of an index holding only what it may see."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import is_change_log, parse_query
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.urls import doc_id

PUBLIC = {
    "public/merger.txt": "The merger was announced to the whole company on Monday",
    "public/picnic.txt": "The picnic was announced to the whole company on Monday",
    "public/canteen.txt": "The canteen menu for the week, soup and bread",
    "public/parking.txt": "Parking spaces are assigned by the facilities team",
    **{f"public/notice-{n}.txt": f"Notice {n}: the office is closed on public holidays" for n in range(20)},
}
HIDDEN_HR = {f"hr/merger-{n}.txt": f"Merger plans, draft {n}: merger terms and the merger timetable"
             for n in range(5)}
BOARD = {"board/picnic.txt": "The board picnic budget, picnic picnic picnic"}
_names = itertools.count()


def _doc(name: str, content: str, groups=()):
    url = f"file:///srv/rank/{name}"
    entry = Entry(doc_id(url), url, "file:///srv/rank", 1, len(content), 0, "", None, "", [], "", "", "", "",
                  list(groups))
    return make_document(RawDocument(entry, "text/plain", content.encode(), ""), Prepared(title="", content=content),
                         PrepareOptions((), "fp", 2**20, 1000))


def _docs(named: dict[str, str], groups=()):
    return [_doc(name, content, groups) for name, content in named.items()]


@pytest.fixture(params=["embedded", "opensearch"])
def new_target(request, tmp_path):
    """A function making empty targets of one kind; every target it made is closed afterwards."""
    made = []

    def make():
        if request.param == "embedded":
            target = EmbeddedIndex(str(tmp_path / f"index-{next(_names)}.sqlite"))
        else:
            from beamtrawl.transforms.index.opensearch import OpenSearchIndex

            target = OpenSearchIndex(request.getfixturevalue("opensearch"),
                                     request.getfixturevalue("fresh_index")(str(next(_names))))
        target.prepare()
        made.append(target)
        return target

    yield make
    for target in made:
        target.close()


def _write(target, docs) -> None:
    target.snapshot_splits()
    assert target.upsert(docs) == []
    target.finish(succeeded=True)


def _scores(target, text: str, groups=()) -> dict[str, float]:
    return {hit.url.rsplit("/srv/rank/", 1)[1]: hit.score for hit in target.search(parse_query(text, groups=groups), 50)}


def test_hidden_documents_do_not_move_a_public_searchers_scores(new_target):
    target = new_target()
    _write(target, _docs(PUBLIC))
    before = {word: _scores(target, word) for word in ("merger", "picnic", "monday")}
    assert before["merger"] == {"public/merger.txt": before["merger"]["public/merger.txt"]}
    assert before["merger"]["public/merger.txt"] == before["picnic"]["public/picnic.txt"]  # as the issue saw

    _write(target, _docs(HIDDEN_HR, ["hr"]) + _docs(BOARD, ["board"]))
    after = {word: _scores(target, word) for word in ("merger", "picnic", "monday")}
    assert after == before


def test_a_group_searcher_scores_as_in_an_index_of_what_it_may_see(new_target):
    # The reference holds what hr may see in one partition (all public): one index, one shard on OpenSearch,
    # so its statistics are those of exactly these documents.
    everything, seen_by_hr = new_target(), new_target()
    _write(everything, _docs(PUBLIC) + _docs(HIDDEN_HR, ["hr"]) + _docs(BOARD, ["board"]))
    _write(seen_by_hr, _docs(PUBLIC) + _docs(HIDDEN_HR))
    for text in ("merger", "picnic", "monday", "merger timetable", '"merger terms"', "merg*"):
        scores = _scores(everything, text, ["hr"])
        assert scores, text
        assert scores == pytest.approx(_scores(seen_by_hr, text), abs=1e-4), text
    # the board sees its own picnic document, ranked among the board's and the public's documents only
    assert set(_scores(everything, "picnic", ["board"])) == {"public/picnic.txt", "board/picnic.txt"}


def test_scores_follow_documents_that_change_groups_or_leave(new_target):
    target, reference = new_target(), new_target()
    _write(target, _docs(PUBLIC) + _docs(HIDDEN_HR, ["hr"]))
    _write(target, _docs(dict(itertools.islice(HIDDEN_HR.items(), 2))))  # two hr documents made public
    target.delete([doc.id for doc in _docs(dict(itertools.islice(HIDDEN_HR.items(), 4, 5)), ["hr"])])
    _write(reference, _docs(PUBLIC) + _docs(dict(itertools.islice(HIDDEN_HR.items(), 2))))
    assert _scores(target, "merger") == pytest.approx(_scores(reference, "merger"), abs=1e-4)
    assert len(_scores(target, "merger")) == 3


def test_the_ranking_benchmark_runs_tiny_on_both_targets(opensearch):
    """bench/ranking_bench.py --tiny: the benchmark's code paths and checks, not its figures."""
    import subprocess
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench" / "ranking_bench.py"
    done = subprocess.run([sys.executable, str(bench), "--tiny", "--url", opensearch], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "embedded: closed / leaking" in done.stdout and "opensearch: closed / leaking" in done.stdout


# -- ranking on a real tree: manual pages as mandoc renders them, and the documents beside them ------------
#: The packages whose /usr/share/doc and English manual pages make the tree (tests/package_files.py).
REAL_PACKAGES = ("grep", "findutils", "apt", "coreutils")
#: A query → the hits that may come first (issue 28, item 10): a manual page named for the query, a file named
#: exactly as the query, a title that equals it; never a change log or NEWS file that mentions it.
FIRST_HITS = {
    "grep": ("man/man1/grep.1.gz",),
    "find": ("man/man1/find.1.gz",),
    "xargs": ("man/man1/xargs.1.gz",),
    "ls": ("man/man1/ls.1.gz",),
    "sources.list": ("doc/apt/examples/sources.list", "man/man5/sources.list.5.gz"),
    "apt-get": ("man/man8/apt-get.8.gz",),
}


def _real_tree(root: Path) -> None:
    from tests.package_files import debian_tree

    for package in REAL_PACKAGES:
        share = debian_tree(package) / "usr" / "share"
        for doc in (share / "doc").iterdir():
            shutil.copytree(doc, root / "doc" / doc.name, symlinks=False, dirs_exist_ok=True,
                            ignore_dangling_symlinks=True)
        for section in (share / "man").glob("man[1-8]"):  # English only: translations would be duplicates
            shutil.copytree(section, root / "man" / section.name, symlinks=False, dirs_exist_ok=True,
                            ignore_dangling_symlinks=True)


def test_real_tree_a_page_named_for_the_query_comes_first_and_change_logs_do_not(
        tmp_path, make_config, os_config, crawl, search):
    root = tmp_path / "share"
    _real_tree(root)
    for config in (make_config(root), os_config(root)):
        assert crawl(config).code <= 1
        for text, first in FIRST_HITS.items():
            urls = [hit["url"].split("/share/", 1)[1] for hit in search(config, text, limit=50)]
            assert urls and urls[0] in first, (config.name, text, urls[:5])
        urls = [hit["url"].split("/share/", 1)[1] for hit in search(config, "grep", limit=100)]
        changes = [n for n, url in enumerate(urls) if is_change_log(url.rsplit("/", 1)[1])]
        assert changes and min(changes) > urls.index("man/man1/grep.1.gz"), urls[:10]
