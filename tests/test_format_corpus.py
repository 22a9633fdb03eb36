"""Every format, and every kind of broken input, through a real crawl (``beamtrawl crawl``): each file's
title and a known phrase end up in the index; each broken file gives its report line and a document
while the crawl goes on. Preparators from another distribution come in through the entry-point group
``beamtrawl.preparators``: tests/data/shout_preparator is installed with ``pip install --target`` and put
on PYTHONPATH, as a user's plugin would be installed beside beamtrawl."""

from __future__ import annotations

import io
import os
import sqlite3
import zipfile
from pathlib import Path

import format_corpus
import pytest
from pypdf import PdfReader, PdfWriter

from tests.conftest import installed_for_crawls

HERE = Path(__file__).resolve().parent
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    return installed_for_crawls(tmp_path_factory, "shout_preparator")


@pytest.fixture
def with_plugin(plugin_path, monkeypatch):
    """The crawl subprocess (and its workers) find the plugin distribution on PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([plugin_path, str(HERE.parent)]))


def indexed(config: Path) -> dict[str, dict]:
    """{file name: stored fields and searchable text} read straight from the embedded index."""
    import yaml

    path = yaml.safe_load(config.read_text())["index"]["path"]
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT d.filename, d.title, d.mimetype, d.preparation_error, f.content, f.metadata "
                          "FROM docs d JOIN docs_fts f ON f.rowid = d.rid").fetchall()
    return {row["filename"]: dict(row) for row in rows}


def words(text: str) -> str:
    return " ".join(text.split())


def test_every_format_is_indexed_with_title_and_text(tmp_path, make_config, crawl, search, with_plugin):
    root = tmp_path / "docs"
    docs = format_corpus.documents()
    format_corpus.write(root, docs)
    (root / "field.note").write_text("observed a razorbill at dawn\n")
    (root / "loud.shout").write_text("storm petrels everywhere\n")
    config = make_config(root, preparators=[
        {"name": "notes", "preparator": "external", "url_pattern": r"\.note$",
         "params": {"command": "sed s/razorbill/RAZORBILL/ ${filename}", "timeout": 30}},
        {"name": "shout", "priority": 30, "params": {"prefix": "Loud: "}},
    ])

    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))
    assert run.counts["prepared"] == len(docs) + 2
    index = indexed(config)
    for doc in docs:
        hit = index[doc.name]
        assert hit["preparation_error"] == "", doc.name
        assert hit["title"] == doc.title, doc.name
        assert doc.phrase in words(hit["content"] + " " + hit["metadata"]), doc.name
    assert "observed a RAZORBILL at dawn" in index["field.note"]["content"]
    assert index["loud.shout"]["title"] == "Loud: STORM" and "STORM PETRELS" in index["loud.shout"]["content"]
    # found by searching, as a user would: a phrase inside a PDF attached to a mail, a DOCX in a ZIP
    assert [h["url"].rsplit("/", 1)[1] for h in search(config, "guillemot")] == ["mail-v0.eml"]
    assert [h["url"].rsplit("/", 1)[1] for h in search(config, "eider")] == ["bundle-v0.zip"]

    again = crawl(config)  # nothing changed: nothing prepared again
    assert again.counts["unchanged"] == len(docs) + 2 and again.counts["prepared"] == 0
    config = make_config(root, preparators=[{"name": "shout", "params": {"prefix": "Quiet: "}}])
    changed = crawl(config)  # another configuration: every document is prepared again
    assert changed.counts["prepared"] == len(docs) + 2
    assert indexed(config)["loud.shout"]["title"] == "Quiet: STORM"
    assert indexed(config)["field.note"]["content"] == "observed a razorbill at dawn\n"  # now plain text


def _pdf() -> bytes:
    return format_corpus._pdf("Broken PDF", "the broken pdf")


def _encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_pdf())))
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("bomb1.txt", "bomb2.txt"):
            with archive.open(name, "w") as entry:
                for _ in range(100):
                    entry.write(b"A" * MiB)
    return buffer.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<lolz>&lol4;</lolz>"""


def test_broken_inputs_each_give_a_report_line_and_a_document(tmp_path, make_config, crawl, with_plugin):
    root = tmp_path / "broken"
    root.mkdir()
    pdf = _pdf()
    files = {
        "truncated.pdf": pdf[: len(pdf) // 2],
        "encrypted.pdf": _encrypted_pdf(),
        "bomb.zip": _zip_bomb(),
        "lol.xml": BILLION_LAUGHS,
        "empty.pdf": b"",
        "garbage.txt": os.urandom(4096),
        "parser.hang": b"this file makes the hang preparator loop forever",
        "fine.txt": b"the crawl goes on after all of them",
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    (root / "report.docx").write_bytes(pdf)  # wrong extensions: the content decides
    (root / "table.pdf").write_bytes(format_corpus._xlsx("Misnamed sheet", "misnamed petrel"))
    with open(root / "huge.bin", "wb") as handle:  # 200 MB, sparse: no disk space used
        handle.truncate(200 * 1000 * 1000)
    config = make_config(root, preparation={"timeout": 5})

    run = crawl(config)
    assert run.code == 1, run.stderr  # documents failed; the crawl itself finished
    problems = run.problems()
    url = f"file://{root}/"
    assert "pdf: not readable as PDF" in problems[url + "truncated.pdf"]
    assert problems[url + "encrypted.pdf"] == "pdf: encrypted"
    assert problems[url + "bomb.zip"] == ("archive read partially: reached max_bytes (10485760); "
                                          "text cut at max_content_length (10000000 characters)")
    assert problems[url + "lol.xml"] == ("xml: XML refused (entities or external references): EntitiesForbidden("
                                         "name='lol', system_id=None, public_id=None); a lower-priority preparator "
                                         "read it")  # the text preparator: the bomb's text, never expanded
    assert problems[url + "empty.pdf"] == ("the name says application/pdf but the content is application/x-empty: "
                                           "indexed by metadata only")
    assert problems[url + "garbage.txt"] == ("the name says text/plain but the content is application/octet-stream: "
                                             "indexed by metadata only")
    assert problems[url + "parser.hang"] == ("hang: timed out after 5 s (the preparing process was killed); "
                                             "a lower-priority preparator read it")  # the text preparator
    assert problems[url + "huge.bin"] == ("larger than max_file_size (200000000 > 104857600 bytes): "
                                          "indexed by metadata only")
    assert run.counts["failed"] == 2 and run.counts["truncated"] == 1 and run.counts["oversize"] == 1
    assert run.counts["fallback"] == 2 and run.counts["metadata_only"] == 2

    index = indexed(config)
    assert set(index) == set(files) | {"report.docx", "table.pdf", "huge.bin"}  # every file has its document
    broken = set(files) - {"fine.txt"} | {"huge.bin"}
    assert set(problems) == {url + name for name in broken}
    for name in broken:  # each carries its report line, as a substitute document does
        assert index[name]["preparation_error"] == problems[url + name], name
    for name in ("truncated.pdf", "encrypted.pdf", "empty.pdf", "garbage.txt", "huge.bin"):  # nothing read
        assert index[name]["content"] == "", name
    assert (index["empty.pdf"]["mimetype"], index["garbage.txt"]["mimetype"]) == (  # their metadata stays
        "application/x-empty", "application/octet-stream")
    assert index["parser.hang"]["content"] == files["parser.hang"].decode()
    assert "&lol4;" in index["lol.xml"]["content"] and len(index["lol.xml"]["content"]) < 1000
    assert index["bomb.zip"]["content"].count("A") > 9_900_000
    assert index["report.docx"]["title"] == "Broken PDF" and "the broken pdf" in index["report.docx"]["content"]
    assert index["table.pdf"]["title"] == "Misnamed sheet" and "misnamed petrel" in index["table.pdf"]["content"]
    assert index["fine.txt"]["content"] == "the crawl goes on after all of them"
    assert index["fine.txt"]["preparation_error"] == ""
    assert [index[name]["preparation_error"] for name in ("report.docx", "table.pdf")] == ["", ""]
