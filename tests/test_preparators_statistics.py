"""SAS, SPSS and Stata data files (issue 24, item 4): Tika's SAS test documents and the iris dataset as
Debian's r-cran-haven ships it in each package's format. Typed by their signatures, read by pyreadstat,
found by ``beamtrawl search``."""

from __future__ import annotations

import pytest
from beamtrawl.transforms.preparators import statistics

from tests.package_files import debian_file, tika_test_document
from tests.preparing import prepare_bytes

HAVEN = "usr/lib/R/site-library/haven/examples"
# (where: a Tika module or "haven", file, its type, a phrase its text holds)
FILES = [
    ("code", "test-columnar.sas7bdat", statistics.SAS_DATA, "This is row 3 of 10"),
    ("code", "testSAS.sas7bdat", statistics.SAS_DATA, "This is row 10 of 10"),
    ("code", "testSAS.xpt", statistics.SAS_XPORT, "This is row 7 of 10"),
    ("haven", "iris.sas7bdat", statistics.SAS_DATA, "5.1 3.5 1.4 0.2 setosa"),
    ("haven", "iris.sav", statistics.SPSS, "6.3 3.3 6 2.5 virginica"),
    ("haven", "iris.dta", statistics.STATA, "5.1 3.5 1.4 0.2"),
]


def document(where: str, name: str) -> bytes:
    return debian_file("r-cran-haven", f"{HAVEN}/{name}").read_bytes() if where == "haven" \
        else tika_test_document(where, name)


def run(name: str, data: bytes):
    return prepare_bytes(data, f"file:///data/{name}")


@pytest.mark.parametrize("where, name, mimetype, phrase", FILES, ids=[f"{f[0]}-{f[1]}" for f in FILES])
def test_data_file_is_typed_and_read(where, name, mimetype, phrase):
    prepared, errors, typed = run(name, document(where, name))
    assert (errors, typed) == ([], mimetype)
    assert phrase in prepared.content and not prepared.partial


def test_labels_are_title_headlines_and_values():
    prepared, _errors, _typed = run("test-columnar.sas7bdat", document("code", "test-columnar.sas7bdat"))
    assert prepared.title == "TESTING"
    assert prepared.headlines[:3] == ["Record Number", "Square of the Record Number", "Description of the Row"]
    spss, _errors, _typed = run("iris.sav", document("haven", "iris.sav"))
    assert "Species setosa versicolor virginica" in spss.content  # the value labels, and rows show them


def test_percent_formats_show_as_sas_shows_them():
    """PERCENT7.1 holds 0.6666…: SAS (and Tika) show 66.7%, which a search for 66.7 finds."""
    prepared, _errors, _typed = run("test-columnar.sas7bdat", document("code", "test-columnar.sas7bdat"))
    assert "3 9 This is row 3 of 10 30% 66.7% 1960-03-22 1960-01-01T00:16:40 00:00:27" in prepared.content.splitlines()


def test_rows_beyond_the_bound_are_said():
    data = document("haven", "iris.sav")
    prepared = statistics.prepare_statistics(data, "file:///iris.sav", statistics.SPSS, {"max_rows": 10})
    assert prepared.partial == "read 10 of 150 rows" and "versicolor" not in prepared.content.split("\n", 5)[-1]


def test_damaged_data_files_are_one_failure_each():
    for where, name, _mimetype, _phrase in FILES:
        data = document(where, name)
        prepared, errors, _typed = run(name, data[: len(data) // 2])
        assert prepared is not None or (len(errors) == 1 and errors[0].startswith("statistics: ")), (name, errors)


def test_crawl_finds_data_files_by_search(tmp_path, make_config, crawl, search):
    root = tmp_path / "data"
    root.mkdir()
    for where, name, _mimetype, _phrase in FILES:
        (root / f"{where}-{name}").write_bytes(document(where, name))
    config = make_config(root)
    run_ = crawl(config)
    assert run_.code == 0, (run_.stderr, run_.report.get("problems"))
    for where, name, _mimetype, phrase in FILES:
        assert f"{where}-{name}" in [hit["url"].rsplit("/", 1)[1] for hit in search(config, f'"{phrase}"')], phrase
