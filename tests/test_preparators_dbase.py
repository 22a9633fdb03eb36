"""dBASE tables and their memo files, on the bibliography LibreOffice ships (``biblio.dbf``, whose authors and
titles are memo fields held in ``biblio.dbt`` beside it): the table names every column, the memo file is read
memo by memo, and a damaged memo file is what it holds up to the damage, never a crash."""

from __future__ import annotations

import pytest

from tests.package_files import debian_file
from tests.preparing import prepare_bytes

_BIBLIO = "usr/lib/libreoffice/presets/database/biblio/biblio"


def _biblio(suffix: str) -> bytes:
    return debian_file("libreoffice-common", f"{_BIBLIO}.{suffix}").read_bytes()


def test_a_table_names_its_memo_columns_too():
    """Tika's header names Author and Title; ours named only the columns whose values the table holds."""
    prepared, errors, mimetype = prepare_bytes(_biblio("dbf"), "file:///biblio/biblio.dbf")
    assert errors == [] and mimetype == "application/x-dbf"
    header, first = prepared.content.splitlines()[:2]
    assert {"Author", "Title", "Publisher", "ISBN"} <= set(header.split("\t"))
    assert len(first.split("\t")) == len(header.split("\t")) and "B0051J8FD4" in first.split("\t")


def test_a_memo_file_is_read_memo_by_memo():
    """The authors, titles and publishers of biblio.dbt, which Tika reads as nothing (application/octet-stream)."""
    prepared, errors, mimetype = prepare_bytes(_biblio("dbt"), "file:///biblio/biblio.dbt")
    assert errors == [] and mimetype == "application/x-dbase-memo"
    lines = prepared.content.splitlines()
    assert lines[:3] == ["Artymiak, Jacek", "devGuide.net Ltd", "LibreOffice Calc Functions and Formulas Tips"]
    assert "Die Duden-Rechtschreibprüfung für OOo und LibreOffice" in lines and prepared.fields["memos"] == "78"


@pytest.mark.parametrize("cut", [512, 700, 5000, 46000])
def test_a_cut_memo_file_keeps_what_it_holds(cut):
    data = _biblio("dbt")[:cut]
    prepared, errors, _ = prepare_bytes(data, "file:///biblio/biblio.dbt")
    assert errors == [] and "\x1a" not in prepared.content and "\0" not in prepared.content
    assert (cut < 1100) or prepared.content.startswith("Artymiak, Jacek")


@pytest.mark.parametrize("name", ["biblio.dbt", "biblio.fpt"])
def test_memo_lengths_past_the_file_end_stop_the_walk(name):
    """dBASE IV and FoxPro memos say their length: one past the end is read up to the end, and the walk stops."""
    header = b"\0\0\0\x02\0\0\x02\0" + b"\0" * 504
    memo = (b"\xff\xff\x08\x00" + (2**31).to_bytes(4, "little") if name.endswith(".dbt")
            else (1).to_bytes(4, "big") + (2**31).to_bytes(4, "big")) + b"the only memo"
    prepared, errors, _ = prepare_bytes(header + memo, f"file:///x/{name}")
    assert errors == [] and prepared.content == "the only memo"


def test_a_text_file_named_like_a_memo_file_is_text():
    text = b"Notes on the bibliography, kept beside it.\n" * 20
    prepared, errors, mimetype = prepare_bytes(text, "file:///x/notes.dbt")
    assert errors == [] and mimetype != "application/x-dbase-memo" and prepared.content.startswith("Notes on the bibliography")
