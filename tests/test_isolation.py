"""One element never fails the crawl (issue 14, item 1), and names that are not UTF-8 are kept.

A failure is injected into one stage at a time by real means: a folder or file the crawler may not
read, a preparator whose process dies of a segmentation fault, an access controller that raises, a
plugin that hands on a value the next step cannot use. Each gives exactly one report line naming the
URL and the stage, everything else is indexed, and the crawl exits 1. The parts that fail on purpose
are a third-party distribution (tests/data/saboteur), installed through its entry points.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tarfile
from pathlib import Path

import pytest

from tests.conftest import installed_for_crawls
from tests.package_files import PY_LIB, PY_TESTSUITE, debian_file
from tests.test_opensearch import all_docs, index_name

HERE = Path(__file__).resolve().parent
CPYTHON_TESTTAR = f"{PY_LIB}/test/testtar.tar"


@pytest.fixture(scope="module")
def saboteur_path(tmp_path_factory) -> str:
    return installed_for_crawls(tmp_path_factory, "saboteur")


@pytest.fixture
def with_saboteur(saboteur_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([saboteur_path, str(HERE.parent)]))


def indexed(config_index: Path) -> dict[str, dict]:
    """{file name: stored fields} straight from the embedded index."""
    with sqlite3.connect(config_index) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT d.url, d.filename, d.title, d.preparation_error, f.content "
                          "FROM docs d JOIN docs_fts f ON f.rowid = d.rid").fetchall()
    return {row["filename"]: dict(row) for row in rows}


GOOD = {"alpha.txt": "alpha apples", "bravo.md": "# Bravo\n\nbravo bananas", "sub/charlie.txt": "charlie cherries"}

# stage, the victim's path, (kind, stage) of its report line, whether it has a substitute document, settings
CASES = {
    "listing": ("locked/delta.txt", ("incomplete", "discover"), False, {}),
    "read": ("unreadable.txt", ("failed", "read"), False, {}),
    "preparator": ("victim.crash", ("failed", "prepare"), True, {}),
    "access control": ("victim.txt", ("failed", "access"), False, {
        "access_control": [{"class": "beamtrawl_saboteur:Gatekeeper", "params": {"url": "victim"}}]}),
    "building the document": ("victim.txt", ("failed", "document"), True, {
        "plugins": [{"plugin": "saboteur", "params": {"hook": "on_after_prepare", "url": "victim"}}]}),
    "serialising for the index": ("victim.txt", ("failed", "write"), True, {
        "plugins": [{"plugin": "saboteur", "params": {"hook": "on_create_index_entry", "url": "victim"}}]}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_failure_in_one_stage_is_one_report_line(case, tmp_path, make_config, crawl, with_saboteur):
    victim, (kind, stage), substitute, settings = CASES[case]
    root = tmp_path / "tree"
    for name, text in {**GOOD, victim: "victim text"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    if case == "preparator":  # bytes only the crashing preparator claims (by name): no other may read them
        (root / victim).write_bytes(bytes(range(256)) * 4)
    if case == "listing":
        (root / "locked").chmod(0)
    if case == "read":
        (root / victim).chmod(0)
    config = make_config(root, **settings)

    run = crawl(config)

    victim_url = f"file://{root}/{victim}"
    expected_url = victim_url if case != "listing" else f"file://{root}/locked"
    problems = [(p["url"], p["kind"], p["stage"]) for p in run.report["problems"]]
    assert problems == [(expected_url, kind, stage)], run.report["problems"]
    assert run.code == 1, run.stdout + run.stderr
    docs = indexed(tmp_path / "index.sqlite")
    for name, text in GOOD.items():
        assert text.split()[-1] in docs[Path(name).name]["content"], name
    if substitute:
        doc = docs[Path(victim).name]
        assert doc["preparation_error"] and doc["content"] == "" and doc["url"] == victim_url
    else:
        assert Path(victim).name not in docs
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout


def test_an_access_controller_failure_keeps_the_indexed_version(tmp_path, make_config, crawl, with_saboteur):
    """A document the last crawl indexed, changed since, whose access controller now fails: one report
    line, exit 1, and the index keeps the version it had (neither deleted nor rewritten without groups)."""
    root = tmp_path / "tree"
    for name, text in {**GOOD, "victim.txt": "victim text"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    assert crawl(make_config(root)).code == 0
    before = indexed(tmp_path / "index.sqlite")["victim.txt"]
    (root / "victim.txt").write_text("victim text, second version", encoding="utf-8")
    run = crawl(make_config(root, **CASES["access control"][3]))
    assert [(p["url"], p["stage"]) for p in run.report["problems"]] == [(f"file://{root}/victim.txt", "access")]
    assert run.code == 1 and run.counts["deleted"] == 0
    assert indexed(tmp_path / "index.sqlite")["victim.txt"] == before


def test_a_document_opensearch_rejects_is_one_report_line(tmp_path, os_config, crawl, opensearch,
                                                          with_saboteur):
    """A value the mapping cannot take (a keyword over 32 KB) is the document's failure, not the index's."""
    root = tmp_path / "tree"
    for name, text in {**GOOD, "victim.txt": "victim text"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    config = os_config(root, plugins=[{"plugin": "saboteur", "params": {
        "hook": "on_create_index_entry", "url": "victim", "how": "huge"}}])
    run = crawl(config)
    assert [(p["url"], p["kind"], p["stage"]) for p in run.report["problems"]] == [
        (f"file://{root}/victim.txt", "failed", "write")], run.report["problems"]
    assert "the index rejected the document" in run.report["problems"][0]["reason"]
    assert run.code == 1 and not run.report["fatal"]
    docs = {d["filename"]: d for d in all_docs(opensearch, index_name(config)).values()}
    assert sorted(docs) == sorted([*(Path(n).name for n in GOOD), "victim.txt"])
    assert docs["victim.txt"]["preparation_error"] and not docs["victim.txt"]["content"]


def _latin1_tree(root: Path, testtar: Path) -> None:
    """A TAR whose member names are Latin-1 bytes, a file whose own name is not UTF-8, CPython's testtar."""
    root.mkdir()
    with tarfile.open(root / "latin.tar", "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        for name in ("café.txt", "naïve/résumé.txt"):
            source = root.parent / "member.txt"
            source.write_text("quokka notes\n", encoding="utf-8")
            tar.add(source, arcname=name)
    with open(os.path.join(os.fsencode(root), b"numbat-\xe9t\xe9.txt"), "wb") as odd:  # not UTF-8: Latin-1
        odd.write(b"numbat summary\n")
    (root / "plain.txt").write_text("plain wombat\n", encoding="utf-8")
    (root / "testtar.tar").write_bytes(testtar.read_bytes())


@pytest.fixture(scope="module")
def testtar() -> Path:
    """CPython's own testtar.tar (Latin-1 member names among others), from Debian's package (fetched by
    tests/run.sh)."""
    return debian_file(PY_TESTSUITE, CPYTHON_TESTTAR)


def _check_names(run, docs_by_name: dict[str, dict]) -> None:
    assert run.code == 0, run.stdout + run.stderr
    assert run.report["problems"] == []
    latin = docs_by_name["latin.tar"]["content"]
    assert "caf\\xe9.txt" in latin and "na\\xefve/r\\xe9sum\\xe9.txt" in latin and "quokka notes" in latin
    odd = docs_by_name["numbat-\\xe9t\\xe9.txt"]
    assert odd["url"].endswith("/numbat-%E9t%E9.txt")  # the exact bytes, percent-encoded
    assert "numbat summary" in odd["content"]
    assert "ustar/umlauts-\\xc4\\xd6\\xdc\\xe4\\xf6\\xfc\\xdf" in docs_by_name["testtar.tar"]["content"]


def test_latin1_names_are_kept_escaped_in_the_embedded_index(tmp_path, make_config, crawl, search, testtar):
    root = tmp_path / "tree"
    _latin1_tree(root, testtar)
    config = make_config(root)
    run = crawl(config)
    docs = indexed(tmp_path / "index.sqlite")
    _check_names(run, docs)
    assert [h["url"] for h in search(config, "numbat")] == [docs["numbat-\\xe9t\\xe9.txt"]["url"]]
    assert crawl(config).counts["unchanged"] == len(docs)  # and a re-crawl finds them unchanged


def test_latin1_names_are_kept_escaped_in_opensearch(tmp_path, os_config, crawl, opensearch, testtar):
    root = tmp_path / "tree"
    _latin1_tree(root, testtar)
    config = os_config(root)
    run = crawl(config)
    docs = {d["filename"]: d for d in all_docs(opensearch, index_name(config)).values()}
    _check_names(run, docs)


def test_a_failed_pipeline_says_what_failed_and_that_its_counts_are_unknown():
    from beamtrawl.pipeline.crawl import _cause
    from beamtrawl.pipeline.report import summary

    beam_error = RuntimeError("Traceback (most recent call last):\n  File \"x\", line 1\n"
                              "UnicodeEncodeError: 'utf-8 [while running 'Prepare/Prepare:archive']' codec "
                              "can't encode character '\\udce9'\n")
    assert _cause(beam_error).startswith("UnicodeEncodeError: 'utf-8 [while running 'Prepare/Prepare:archive']'")
    report = {"counts": dict.fromkeys(("new", "changed", "unchanged", "failed"), 0), "fatal": "the pipeline failed",
              "documents_in_index": 1500, "documents_in_index_before": 0, "deletes_withheld": "", "problems": [],
              "timings": {"total_s": 1.0}}
    text = summary(report)
    assert "wrote 0" not in text and "index holds 1,500 (0 before)" in text, text
    json.dumps(report)
