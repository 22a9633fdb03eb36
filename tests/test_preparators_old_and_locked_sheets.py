"""Spreadsheets Tika reads that were unread (issue 24, item 3), on Apache Tika's test documents: Excel 2.x–4.0
worksheets (bare BIFF streams, no compound file) and workbooks encrypted with Excel's default password
("VelvetSweatshop", what Excel uses for a protected workbook without a password to open); one with a
password of its own stays a clear failure. And the cells' comments (notes) of XLS and XLSX files."""

from __future__ import annotations

import xlrd
from beamtrawl.transforms.preparators import encrypted

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes

LOCKED_PHRASE = "При запуске пробной версии Office 2007 в первый раз после активации лицензии"
BIFF4_PHRASE = "Table 10 -- Examination Coverage: Recommended and Average Recommended Additional Tax After"


def run(name: str):
    data = tika_test_document("microsoft", name)
    return prepare_bytes(data, f"file:///sheets/{name}")[:2]


def test_workbook_encrypted_with_the_default_password_is_read_by_its_type():
    for name in ("protect.xlsx", "protectedFile.xlsx"):
        prepared, errors = run(name)
        assert errors == []
        assert prepared.content.startswith("Лист1\n") and LOCKED_PHRASE in prepared.content
        assert prepared.fields["encryption"] == "default password"


def test_workbook_with_a_password_of_its_own_is_one_clear_failure():
    for name, preparator in (("testEXCEL_protected_passtika.xlsx", "encrypted"),
                             ("testEXCEL_protected_passtika.xls", "legacy_office")):
        prepared, errors = run(name)
        assert prepared is None
        assert errors == [f"{preparator}: encrypted with a password other than Excel's default"], name


def test_xls_rc4_decryption_gives_a_workbook_xlrd_reads():
    """The XLS path of ``encrypted.decrypt`` (RC4 CryptoAPI) on a real file, given its password, "tika"."""
    data = tika_test_document("microsoft", "testEXCEL_protected_passtika.xls")
    assert encrypted.decrypt(data) is None
    book = xlrd.open_workbook(file_contents=encrypted.decrypt(data, password="tika"))
    assert book.sheet_by_index(0).cell_value(0, 0) == "This is an Encrypted Excel spreadsheet."


def test_excel_4_worksheet_is_read_without_a_compound_file():
    prepared, errors = run("testEXCEL_4.xls")
    assert errors == []
    assert BIFF4_PHRASE in " ".join(prepared.content.split())


def test_cell_comments_are_text_in_xls_and_xlsx():
    for name in ("testComment.xls", "testComment.xlsx"):
        prepared, errors = run(name)
        assert errors == [] and prepared.content == "Sheet1\nHere is some text\nAuthor: Here is a comment", name


def test_damaged_locked_and_old_sheets_are_one_failure_each():
    for name in ("protect.xlsx", "testEXCEL_4.xls"):
        data = tika_test_document("microsoft", name)
        half = data[: len(data) // 2]
        prepared, errors, _ = prepare_bytes(half, f"file:///sheets/{name}")
        assert prepared is not None or errors, name


def test_crawl_finds_locked_and_old_sheets_by_search(tmp_path, make_config, crawl, search):
    root = tmp_path / "sheets"
    root.mkdir()
    for name in ("protect.xlsx", "testEXCEL_4.xls", "testEXCEL_protected_passtika.xlsx", "testComment.xlsx"):
        (root / name).write_bytes(tika_test_document("microsoft", name))
    config = make_config(root)
    run_ = crawl(config)
    assert run_.code == 1  # the file with a password of its own is the one report line
    assert [p["url"].rsplit("/", 1)[1] for p in run_.report["problems"]] == ["testEXCEL_protected_passtika.xlsx"]
    assert [hit["url"].rsplit("/", 1)[1] for hit in search(config, f'"{LOCKED_PHRASE}"')] == ["protect.xlsx"]
    assert [hit["url"].rsplit("/", 1)[1] for hit in search(config, f'"{BIFF4_PHRASE}"')] == ["testEXCEL_4.xls"]
    assert [hit["url"].rsplit("/", 1)[1] for hit in search(config, '"Here is a comment"')] == ["testComment.xlsx"]


def test_xls_headers_and_footers_are_text_without_their_codes():
    """HEADER and FOOTER records, which xlrd does not read: ``&LHeader - Corporate Spreadsheet&C…``."""
    prepared, errors, _mimetype = prepare_bytes(tika_test_document("microsoft", "testEXCEL_headers_footers.xls"),
                                                "file:///sheets/testEXCEL_headers_footers.xls")
    assert errors == [] and ("Header - Corporate Spreadsheet Header - For Internal Use Only Header - Author: John Smith"
                             in prepared.content.splitlines())
