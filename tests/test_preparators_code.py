"""Source code (issue 14, item 7): title and headlines from a tree-sitter parse, the full text as content,
on files that public packages ship: CPython's standard library and test suite (Python, C, C++), Go, Rust and
JavaScript/TypeScript from Debian's packages, Java from a sources jar on Maven Central; and files it cannot
parse."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from beamtrawl.pipeline.config import parse_config
from beamtrawl.pipeline.crawl import preparation_fingerprint
from beamtrawl.transforms.preparators import BUILTIN, chain_for, code
from beamtrawl.transforms.preparators.code import prepare_code
from beamtrawl.transforms.preparators.mime import MimeSniffer
from beamtrawl.transforms.preparators.text import decode_text

from tests.package_files import PY_LIB, PY_STDLIB, PY_TESTSUITE, debian_file, maven_sources_file

REAL = [  # package, path, title, some headlines (in order)
    (PY_STDLIB, f"{PY_LIB}/json/decoder.py", "module decoder",
     ["class JSONDecodeError", "JSONDecodeError.__init__", "py_scanstring", "class JSONDecoder",
      "JSONDecoder.raw_decode"]),
    (PY_STDLIB, f"{PY_LIB}/json/__init__.py", "module json", ["dumps", "loads"]),
    (PY_TESTSUITE, f"{PY_LIB}/distutils/tests/xxmodule.c", "module xxmodule",
     ["newXxoObject", "Xxo_demo", "PyInit_xx"]),
    (PY_TESTSUITE, f"{PY_LIB}/test/_testcppext.cpp", "module _testcppext",
     ["class StrongRef", "StrongRef.~StrongRef", "class VirtualPyObject", "VirtualPyObject.dealloc"]),
    ("golang-github-pkg-errors-dev", "usr/share/gocode/src/github.com/pkg/errors/errors.go", "package errors",
     ["New", "struct fundamental", "fundamental.Error", "struct withStack", "withStack.Format", "Wrapf"]),
    ("librust-either-dev", "usr/share/cargo/registry/either-1.6.1/src/lib.rs", "module either-1.6.1",
     ["enum Either", "impl Either<L, R>", "Either.is_left", "Either.map_left"]),
    ("node-abbrev", "usr/share/nodejs/abbrev/abbrev.js", "module abbrev", ["abbrev", "lexSort"]),
    ("node-tslib", "usr/share/nodejs/tslib/tslib.d.ts", "module tslib", ["__extends", "__awaiter"]),
]


@pytest.mark.parametrize("package, path, title, headlines", REAL, ids=[r[1].rsplit("/", 1)[-1] for r in REAL])
def test_real_source_files(package, path, title, headlines):
    data = debian_file(package, path).read_bytes()
    url = f"file:///{path}"
    mimetype = MimeSniffer()(data, url)
    assert chain_for(BUILTIN, mimetype, url)[0].name == "code", mimetype
    prepared = prepare_code(data, url, mimetype, {})
    assert prepared.title == title
    found = [h for h in prepared.headlines if h in headlines]
    assert list(dict.fromkeys(found)) == headlines
    assert prepared.content == decode_text(data)  # the content stays the whole text


def test_real_java_source():
    data = maven_sources_file("commons-cli", "commons-cli", "1.5.0", "org/apache/commons/cli/DefaultParser.java")
    url = "file:///src/org/apache/commons/cli/DefaultParser.java"
    assert chain_for(BUILTIN, MimeSniffer()(data, url), url)[0].name == "code"
    prepared = prepare_code(data, url, "text/x-java", {})
    assert prepared.title == "class DefaultParser"
    assert {"class DefaultParser", "class DefaultParser.Builder", "DefaultParser.Builder.build",
            "DefaultParser.parse", "DefaultParser.handleToken"} <= set(prepared.headlines)


def test_broken_source_keeps_its_text_and_what_parsed():
    data = debian_file(PY_STDLIB, f"{PY_LIB}/json/decoder.py").read_bytes()
    cut = data[:data.index(b"class JSONDecoder")] + b"class Broken(:\n    def (\x00\n" + data[-400:]
    prepared = prepare_code(cut, "file:///decoder.py", "text/x-script.python", {})
    assert prepared.content == decode_text(cut)
    assert "py_scanstring" in prepared.headlines


def test_binary_files_named_as_source_are_not_code():
    gif = debian_file(PY_TESTSUITE, f"{PY_LIB}/test/imghdrdata/python.gif").read_bytes()
    sniff = MimeSniffer()
    for url in ("file:///pictures/python.py", "file:///videos/clip.ts"):
        mimetype = sniff(gif, url)
        assert [p.name for p in chain_for(BUILTIN, mimetype, url)] == ["image"], mimetype  # read as a picture
    assert chain_for(BUILTIN, "video/mp2t", "file:///videos/clip.ts")[0].name == "metadata_only"
    prepared = prepare_code(gif, "file:///x.py", "application/octet-stream", {})  # called anyway: text, no error
    assert prepared.content == decode_text(gif)


def test_a_grammar_that_does_not_load_leaves_plain_text(monkeypatch):
    monkeypatch.setitem(code._GRAMMARS, "go", ("tree_sitter_nonexistent", "language"))
    data = debian_file("golang-github-pkg-errors-dev", "usr/share/gocode/src/github.com/pkg/errors/errors.go"
                       ).read_bytes()
    prepared = prepare_code(data, "file:///errors.go", "text/plain", {})
    assert (prepared.title, prepared.headlines, prepared.content) == ("", [], decode_text(data))


def test_a_file_too_large_to_parse_is_plain_text(monkeypatch):
    data = debian_file(PY_STDLIB, f"{PY_LIB}/json/decoder.py").read_bytes()
    monkeypatch.setattr(code, "MAX_PARSE_BYTES", len(data) - 1)
    prepared = prepare_code(data, "file:///decoder.py", "text/x-script.python", {})
    assert (prepared.title, prepared.headlines, prepared.content) == ("", [], decode_text(data))


def test_parsers_load_lazily():
    probe = "import sys, transforms.preparators; print(sorted(m for m in sys.modules if 'tree_sitter' in m))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True
                          ).stdout.strip() == "[]"


def test_a_preparator_revision_changes_the_fingerprint(tmp_path, monkeypatch):
    config = parse_config({"start": [{"url": "file:///srv"}], "index": {"path": "i.sqlite"}}, str(tmp_path / "c.yaml"))
    before = preparation_fingerprint(config.preparators, config)
    monkeypatch.setattr(code, "REVISION", code.REVISION + 1)
    assert preparation_fingerprint(config.preparators, config) != before


def test_crawl_indexes_source_structure(tmp_path, make_config, crawl, search):
    root = tmp_path / "src"
    root.mkdir()
    for name, (package, path) in {
        "decoder.py": (PY_STDLIB, f"{PY_LIB}/json/decoder.py"),
        "errors.go": ("golang-github-pkg-errors-dev", "usr/share/gocode/src/github.com/pkg/errors/errors.go"),
        "picture.py": (PY_TESTSUITE, f"{PY_LIB}/test/imghdrdata/python.gif"),
    }.items():
        (root / name).write_bytes(debian_file(package, path).read_bytes())
    config = make_config(root)
    run = crawl(config)
    assert run.code == 0, (run.report.get("problems"), run.stderr[-2000:])
    assert run.counts["failed"] == 0
    [hit] = search(config, "JSONDecoder raw_decode")
    assert (hit["url"].rsplit("/", 1)[-1], hit["title"]) == ("decoder.py", "module decoder")
    [hit] = search(config, "withStack")
    assert hit["title"] == "package errors"
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        headlines = dict(db.execute("SELECT d.filename, f.headlines FROM docs d JOIN docs_fts f ON f.rowid = d.rid"))
    assert "JSONDecoder.raw_decode" in headlines["decoder.py"].splitlines()
    assert headlines["picture.py"] == ""  # a GIF named .py: metadata only, not a failure
