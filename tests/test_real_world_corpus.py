"""A crawl of files nobody on the project made: what ten Debian packages ship (tests/real_corpus.py).

About 5,700 files and 130 symbolic links, 200 MB: Python's HTML documentation, CPython's test data
(testtar.tar with Latin-1 member names, XML without ``<?xml``, mail, audio, odd encodings), GNU
manuals as PDF and HTML, compressed changelogs and man pages, LibreOffice templates and dialogs, and
sample workbooks and documents that R and Python packages ship. The crawl runs once for the module;
each test reads its report or searches its index as a user would (``beamtrawl search``).
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import CrawlRun, beamtrawl, report_path
from tests.package_files import PY_DOC, PY_LIB, PY_TESTSUITE, PYTHON
from tests.real_corpus import corpus

# Symbolic links the packages ship whose target is in another package: not followed (the default),
# so skipped like every link, with no report line and never a failure.
DANGLING_LINKS = [f"{package}/{path}" for package, path in [
    (PY_TESTSUITE, f"usr/share/doc/{PY_TESTSUITE}"),
    ("libreoffice-common", "etc/libreoffice/registry/oo-ad-ldap.xcd.sample"),
    ("libreoffice-common", "etc/libreoffice/registry/oo-ldap.xcd.sample"),
    ("libreoffice-common", "usr/lib/libreoffice/share/prereg/bundled"),
    ("libreoffice-common", "usr/lib/libreoffice/share/psprint/psprint.conf"),
    ("libreoffice-common", "usr/lib/libreoffice/share/registry"),
    (PY_DOC, f"usr/share/doc/{PYTHON}/html/_static/jquery.js"),
    (PY_DOC, f"usr/share/doc/{PYTHON}/html/_static/underscore.js"),
]]
# Files the packages ship broken, each with the report line it must get: CPython's tar with a zero-length
# header (bpo-39017: tarfile refuses it). Every other failure is a defect of beamtrawl.
KNOWN_BROKEN = {f"{PY_TESTSUITE}/{PY_LIB}/test/recursion.tar": "invalid header"}

_TESTS = f"{PY_TESTSUITE}/{PY_LIB}/test"
_PYDOC = f"{PY_DOC}/usr/share/doc/{PYTHON}/html"
_OFFICER = "r-cran-officer/usr/lib/R/site-library/officer"
_OFFICER_TESTS = "r-cran-officer/usr/share/doc/r-cran-officer/tests/testthat"

_READXL = "r-cran-readxl/usr/lib/R/site-library/readxl/extdata"
_LO_TEMPLATES = "libreoffice-common/usr/lib/libreoffice/share/template/common"

# (what it shows, query, a file the hits must include), each phrase checked against the file itself
SPOT_PHRASES = [
    ("gzip changelog", '"chmod -R no longer exits with error status"',
     "coreutils/usr/share/doc/coreutils/NEWS.gz"),
    ("gzip HTML", '"Fix a crash in subinterpreters related to the garbage"',
     f"{_PYDOC}/whatsnew/changelog.html.gz"),
    ("man page", '"list directory contents"', "coreutils/usr/share/man/man1/ls.1.gz"),
    ("HTML page", '"The subprocess module allows you to spawn new processes"',
     f"{_PYDOC}/library/subprocess.html"),
    ("HTML page libmagic calls JavaScript", '"foreign function library for Python"',
     f"{_PYDOC}/library/ctypes.html"),
    ("PDF", '"Bash is primarily concerned with the Shell"', "bash-doc/usr/share/doc/bash/bashref.pdf"),
    ("xlsx past a declared A1 dimension", "virginica horsebean", f"{_READXL}/datasets.xlsx"),
    ("xls", "virginica horsebean", f"{_READXL}/datasets.xls"),
    ("docx", '"Phasellus nec nunc vitae nulla interdum volutpat"', f"{_OFFICER}/doc_examples/example.docx"),
    ("docx.gz", '"column head"', f"{_OFFICER_TESTS}/docs_dir/table-complex.docx.gz"),
    ("pptx", '"an unordered list of paragraphs"', f"{_OFFICER}/doc_examples/example.pptx"),
    ("odt template", '"Put your LOGO here"', f"{_LO_TEMPLATES}/officorr/Modern_business_letter_serif.ott"),
    ("tar member", '"hobby programming project"', f"{_TESTS}/testtar.tar"),
    ("tar member name in Latin-1", "umlauts", f"{_TESTS}/testtar.tar"),
    ("tar.xz member", '"test txt" extension:xz', f"{_TESTS}/testtar.tar.xz"),  # its one member: an empty test.txt
    ("Python source", '"complained about a missing flush"', f"{_TESTS}/test_tarfile.py"),
    ("XML in ISO-8859-1", '"Introduction to XSL"', f"{_TESTS}/xmltestdata/test.xml"),
    ("mail", '"Ppp digest"', f"{_TESTS}/test_email/data/msg_02.txt"),
    ("GNU Info manual in .gz", '"Certain options are available in all of these programs"',
     "coreutils/usr/share/info/coreutils.info.gz"),
    ("roff macro package", '"These ms macros require groff"', "groff/usr/share/groff/1.22.4/tmac/s.tmac"),
    ("HTML index page's list of links", '"Provide access to Python’s configuration information"',
     f"{_PYDOC}/library/python.html"),
    ("delivery report's status part", '"Message content rejected"', f"{_TESTS}/test_email/data/msg_43.txt"),
    ("dBASE memo file beside its table", '"Behind the Screen with Windows XP"',
     "libreoffice-common/usr/lib/libreoffice/presets/database/biblio/biblio.dbt"),
]

# names that say text: "when the name says a text type and the bytes decode as text, it is text"
_TEXT_SUFFIXES = {".txt", ".html", ".htm", ".js", ".css", ".py", ".xml", ".rst", ".md", ".json"}


@pytest.fixture(scope="module")
def tree() -> Path:
    """The corpus tests/run.sh fetched; a machine that cannot fetch it fails here, never skips."""
    return corpus()


@pytest.fixture(scope="module")
def config(tree, tmp_path_factory) -> Path:
    url = "file://" + str(tree)
    folder = tmp_path_factory.mktemp("real-corpus")
    path = folder / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": url, "parse": True, "index": False}],
                                    "whitelist": [{"prefix": url}],
                                    "index": {"path": str(folder / "index.sqlite")}}), encoding="utf-8")
    return path


def _crawl(config: Path) -> CrawlRun:
    done = beamtrawl("crawl", str(config), "--direct_num_workers=2", timeout=1200)
    path = report_path(config)
    report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return CrawlRun(done.returncode, report, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def first(config) -> CrawlRun:
    return _crawl(config)


@pytest.fixture(scope="module")
def second(config, first) -> CrawlRun:
    return _crawl(config)


def _relative(url: str, tree: Path) -> str:
    return url.removeprefix("file://" + str(tree) + "/")


def test_the_crawl_ends_with_exit_0_or_1_and_nothing_fatal(first):
    assert first.code <= 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert not first.report.get("fatal"), first.report.get("fatal")
    assert first.counts["written"] >= 5000, first.counts


def test_only_broken_files_fail_each_with_its_report_line(first, tree):
    problems = {_relative(p["url"], tree): p for p in first.report["problems"]}
    unexpected = {path: p["reason"] for path, p in problems.items()
                  if p["kind"] == "failed" and path not in KNOWN_BROKEN}
    by_reason = collections.Counter(" ".join(reason.split())[:60] for reason in unexpected.values())
    assert not unexpected, f"{len(unexpected)} failures of files that are not broken:\n" + "\n".join(
        [f"{count} × {reason}…" for reason, count in by_reason.most_common()]
        + [f"{path}: {' '.join(reason.split())[:150]}" for path, reason in sorted(unexpected.items())[:20]])
    for path, reason in KNOWN_BROKEN.items():
        assert path in problems and reason in problems[path]["reason"], f"{path}: no line '{reason}'"
    for path in DANGLING_LINKS:
        assert os.path.islink(tree / path) and not os.path.exists(tree / path), f"{path} is not a dangling link"
        assert path not in problems, f"{path}: a link not followed has a report line"
    assert first.counts["symlink_skipped"] >= len(DANGLING_LINKS)


def test_files_whose_name_and_bytes_say_text_are_read_as_text(first, tree):
    assert first.report.get("counts", {}).get("written"), "the crawl wrote nothing"
    unread = []
    for problem in first.report["problems"]:
        path = tree / _relative(problem["url"], tree)
        unread_kind = problem["kind"] in ("failed", "metadata_only")
        if unread_kind and path.suffix in _TEXT_SUFFIXES and path.is_file():
            data = path.read_bytes()
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if data.strip():
                unread.append(f"{_relative(problem['url'], tree)}: {problem['reason'][:150]}")
    assert not unread, f"{len(unread)} text files not read as text:\n" + "\n".join(unread[:30])


def test_xml_files_are_read_as_xml_with_or_without_a_declaration(first, config):
    done = beamtrawl("search", "extension:xml", "--config", str(config), "--json", "--limit", "1000",
                     check_dac=False)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert len(hits) >= 150, len(hits)
    not_xml = sorted(hit["url"].rsplit("/", 1)[-1] for hit in hits if "xml" not in hit["mimetype"])
    assert not not_xml, f"{len(not_xml)} of {len(hits)} .xml files not read as XML: {not_xml[:10]}"


@pytest.mark.parametrize(("what", "query", "expected"), SPOT_PHRASES, ids=[p[0] for p in SPOT_PHRASES])
def test_a_phrase_of_each_format_is_found(first, config, tree, what, query, expected):
    assert (tree / expected).is_file(), f"the corpus lacks {expected}"
    done = beamtrawl("search", query, "--config", str(config), "--json", "--limit", "50", check_dac=False)
    assert done.returncode == 0, done.stderr
    found = {_relative(hit["url"], tree) for hit in json.loads(done.stdout)}
    assert expected in found, f"{what}: {query} found {sorted(found)[:10]}"


def test_an_exact_file_name_outranks_a_partial_one_and_snippets_carry_no_furniture(first, config, tree):
    done = beamtrawl("search", "subprocess", "--config", str(config), "--json", "--limit", "20",
                     check_dac=False)
    assert done.returncode == 0, done.stderr
    pages = [hit for hit in json.loads(done.stdout) if hit["url"].endswith(".html")]
    assert pages and _relative(pages[0]["url"], tree) == f"{_PYDOC}/library/subprocess.html", \
        [_relative(hit["url"], tree) for hit in pages[:5]]
    assert "¶" not in pages[0]["snippet"], pages[0]["snippet"]


def test_an_unchanged_re_crawl_reads_nothing(first, second):
    assert first.code <= 1 and second.code <= 1, second.stdout[-3000:]
    assert second.counts["read"] == 0, second.counts
    assert second.counts["written"] == 0, second.counts
    assert second.counts["unchanged"] >= 5000, second.counts
