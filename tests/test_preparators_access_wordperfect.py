"""Access databases (mdbtools) and WordPerfect documents (libwpd's wpd2text), issue 24 item 4, on Apache
Tika's test documents: read through their helper programs, found by ``beamtrawl search``; without the
program, one warning naming its Debian package, and the documents healed once it is installed."""

from __future__ import annotations

import shutil

import pytest
from beamtrawl.transforms.preparators import access, wordperfect
from beamtrawl.transforms.preparators.base import PreparationError

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes
from tests.test_helper_programs import _path_without

# (Tika module, file, its type, a phrase its text holds)
FILES = [
    ("microsoft", "testACCESS.mdb", "application/x-msaccess", "TitleID TrackID TrackName"),
    ("microsoft", "testAccess2.accdb", "application/x-msaccess", "fox jumped over the bold italic dog"),
    ("microsoft", "testAccess2_2000.mdb", "application/x-msaccess", "普林斯顿大学"),
    ("microsoft", "testAccess_V1997.mdb", "application/x-msaccess", "abcdefg hijklmnop"),
    ("miscoffice", "testWordPerfect.wpd", "application/vnd.wordperfect", "On or about the test A.D. resist Cst."),
    ("miscoffice", "testWordPerfect_5_0.wp", "application/vnd.wordperfect",
     "astronaut Shannon W. Lucid accepts a congratulatory phone call"),
    ("miscoffice", "testWordPerfect_5_1.wp", "application/vnd.wordperfect",
     "Western Gulf of Alaska Petroleum Development Scenarios"),
]


def run(module: str, name: str, data: bytes | None = None):
    data = tika_test_document(module, name) if data is None else data
    return prepare_bytes(data, f"file:///helpers/{name}")


def test_access_values_read_as_access_shows_them():
    """mdb-export's defaults wrote 06/24/15 00:00:00, 1 and 6.2300: a search for 2015 or TRUE missed the row."""
    prepared, _errors, _typed = run("microsoft", "testAccess2.accdb")
    assert "1 the quick 3 6.23 2015-06-24 TRUE fox jumped" in prepared.content
    assert "2 普林斯顿大学 0 0 FALSE" in prepared.content



@pytest.mark.parametrize("value, shown", [
    ("6.2300", "6.23"), ("0.0000", "0"), ("-3.1000", "-3.1"), ("2015-06-24 00:00:00", "2015-06-24"),
    ("10.10", "10.10"), ("2.0", "2.0"), ("12.340", "12.340"), ("Meet at 00:00:00", "Meet at 00:00:00"),
])
def test_only_currency_and_dates_at_midnight_are_shortened(value, shown):
    """The CSV does not say a column's type: a text "10.10" (a version) became 10.1, "2.0" became 2."""
    from beamtrawl.transforms.preparators.access import _field

    assert _field(value) == shown


@pytest.mark.parametrize("module, name, mimetype, phrase", FILES, ids=[f[1] for f in FILES])
def test_file_is_typed_and_read_through_its_helper(module, name, mimetype, phrase):
    prepared, errors, typed = run(module, name)
    assert (errors, typed) == ([], mimetype)
    assert phrase in prepared.content and not prepared.partial


def test_access_tables_are_headlines_and_rich_text_is_text():
    prepared, _errors, _typed = run("microsoft", "testAccess2.accdb")
    assert prepared.headlines == ["Table1", "Table2"]
    assert prepared.content.startswith("Table1\nID ShortTextField NumberField")
    assert "<div>" not in prepared.content and "\0" not in prepared.content  # no HTML, no OLE bytes


@pytest.mark.parametrize("name", ["testAccess2.accdb", "testAccess2_2000.mdb", "testAccess2_2002-2003.mdb"])
def test_access_ole_objects_are_read_by_their_own_type(name):
    """An OLE Object column holds a Word document, which holds a PDF: both read, as Tika reads them."""
    prepared, errors, _typed = run("microsoft", name)
    assert errors == [] and prepared.fields["embedded"] == "1"
    assert "\nembedded: Table1/OLEObject row " in prepared.content  # after the tables
    assert "Test Document with embedded pdf’s:" in prepared.content  # the Word document
    assert "This is a 2010 Word Document embedded as an icon and saved as a pdf." in prepared.content  # its PDF


def test_access_objects_column_cut_or_not_an_object_is_skipped():
    """A value cut by max_output_bytes (odd hex), and one without Access's OLE header, are no part."""
    hexed = "ID,Photo\n1,151C2E0\n2,0A0B0C0D\n3,\n"
    assert list(access._objects(hexed, "T", {"Photo"})) == []


def test_access_tables_beyond_the_bound_are_said():
    data = tika_test_document("microsoft", "testAccess_V1997.mdb")
    prepared = access.prepare_access(data, "file:///a.mdb", "", {**dict(access.DEFAULTS), "max_tables": 2})
    assert prepared.headlines == ["Table1", "Table2"] and prepared.partial == "read 2 of 4 tables"


def test_damaged_and_encrypted_files_are_one_failure_each():
    _prepared, errors, _typed = run("microsoft", "testAccess2_encrypted.accdb")
    assert len(errors) == 1 and errors[0].startswith("access: mdb-tables exited with 1")
    for module, name, _mimetype, _phrase in FILES:
        data = tika_test_document(module, name)
        prepared, errors, _typed = run(module, name, data[: len(data) // 3])
        assert prepared is not None or errors, name


@pytest.mark.parametrize("prepare, program, package, module, name", [
    (access.prepare_access, "mdb-export", "mdbtools", "microsoft", "testACCESS.mdb"),
    (wordperfect.prepare_wordperfect, "wpd2text", "libwpd-tools", "miscoffice", "testWordPerfect.wpd")])
def test_without_its_helper_the_preparator_names_the_package(monkeypatch, tmp_path, prepare, program, package,
                                                             module, name):
    monkeypatch.setenv("PATH", _path_without(program, tmp_path / "bin"))
    defaults = dict(access.DEFAULTS if prepare is access.prepare_access else wordperfect.DEFAULTS)
    with pytest.raises(PreparationError, match=fr"^{program} is not installed \(Debian package {package}\)$"):
        prepare(tika_test_document(module, name), f"file:///{name}", "", defaults)


def test_crawl_finds_them_and_a_missing_helper_is_reported_then_healed(tmp_path, make_config, crawl, search,
                                                                       monkeypatch):
    assert shutil.which("wpd2text"), "wpd2text is missing: tests/run.sh installs libwpd-tools"
    real = shutil.which("wpd2text")
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", _path_without("wpd2text", folder))
    root = tmp_path / "helpers"
    root.mkdir()
    for module, name, _mimetype, _phrase in FILES:
        (root / name).write_bytes(tika_test_document(module, name))
    config = make_config(root)

    def found(phrase: str) -> list[str]:
        return [hit["url"].rsplit("/", 1)[1] for hit in search(config, f'"{phrase}"')]

    first = crawl(config)
    warning = ("wpd2text is not installed (Debian package libwpd-tools): 3 WordPerfect documents prepared without "
               "it; the first crawl after it is installed prepares them again")
    assert [w for w in first.report.get("warnings", []) if "wpd2text" in w] == [warning], first.stderr
    assert found(FILES[0][3]) == [FILES[0][1]] and found(FILES[5][3]) == []
    (folder / "wpd2text").symlink_to(real)
    healed = crawl(config)
    assert healed.code == 0, (healed.stderr, healed.report.get("problems"))
    assert not [w for w in healed.report.get("warnings", []) if "wpd2text" in w]
    for _module, name, _mimetype, phrase in FILES:
        assert name in found(phrase), phrase
