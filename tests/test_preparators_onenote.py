"""OneNote sections (issue 24, item 4), on Apache Tika's test documents (OneNote 2007 to Microsoft 365):
typed by their revision store header, read page by page by onenote-converter, found by ``beamtrawl search``."""

from __future__ import annotations

import pytest

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes

# (file, its title, a phrase its text holds)
FILES = [
    ("testOneNote2007OrEarlier.one", "Friday, August 04, 2017",
     "The notebooks are the files within the application."),
    ("testOneNote2016.one", "So good", "This is one note 2016"),
    ("testOneNote2.one", "Section1HeaderTitle", "wow this is neat"),
    ("test-tika-4303-Chinese-notes.one", "中文标题", "OneNote 是一款数字笔记本，可在工作时自动保存并同步笔记。"),
    ("testOneNoteFromOffice365-2.one", "Tuesday, June 9, 2020", "Content 2"),
    ("testOneNoteEmbeddedWordDoc.one", "Embedded doc sheet", "Where did you get it"),  # the inserted .docx
]


def run(name: str, data: bytes | None = None):
    data = tika_test_document("microsoft", name) if data is None else data
    return prepare_bytes(data, f"file:///notes/{name}")


@pytest.mark.parametrize("name, title, phrase", FILES, ids=[f[0] for f in FILES])
def test_section_is_typed_and_read_with_its_title(name, title, phrase):
    prepared, errors, mimetype = run(name)
    assert (errors, mimetype) == ([], "application/onenote")
    assert prepared.title == title and phrase in " ".join(prepared.content.split())


def test_every_page_title_is_a_headline():
    prepared, _errors, _mimetype = run("testOneNoteFromOffice365-2.one")
    assert prepared.fields["pages"] == "4"
    assert prepared.headlines == ["Tuesday, June 9, 2020", "Page 2", "Tuesday, June 9, 2020", "Tuesday, June 9, 2020"]


@pytest.mark.parametrize("cut", [1024, 4096, 0.5])
def test_damaged_section_is_one_failure_or_what_was_read(cut):
    """Cut after its header, mid-way, or in half: the native parser's errors (panics included) are the
    document's, never the crawl's."""
    data = tika_test_document("microsoft", "testOneNote1.one")
    size = int(len(data) * cut) if isinstance(cut, float) else cut
    prepared, errors, mimetype = run("testOneNote1.one", data[:size])
    assert mimetype == "application/onenote"
    assert prepared is not None or (len(errors) == 1 and errors[0].startswith("onenote: ")), errors


def test_crawl_finds_sections_by_search(tmp_path, make_config, crawl, search):
    root = tmp_path / "notes"
    root.mkdir()
    for name, _title, _phrase in FILES:
        (root / name).write_bytes(tika_test_document("microsoft", name))
    config = make_config(root)
    run_ = crawl(config)
    assert run_.code == 0, (run_.stderr, run_.report.get("problems"))
    for name, title, phrase in FILES:
        hits = search(config, f'"{phrase}"')
        assert [(hit["url"].rsplit("/", 1)[1], hit["title"]) for hit in hits] == [(name, title)], phrase
    hits = search(config, '"December 11, 2019" "nicholas dipiazza"')  # the date line and the author: metadata
    assert sorted(hit["url"].rsplit("/", 1)[1] for hit in hits) == ["testOneNote2016.one", "testOneNoteEmbeddedWordDoc.one"]


def test_inserted_files_are_read_and_their_store_cut_anywhere_is_no_failure():
    """A Word document inserted into a page is read by its own type (Tika reads it); the file data store
    objects, cut at any point or with their lengths overstated, give what is there, never an exception."""
    from beamtrawl.transforms.preparators import onenote

    data = tika_test_document("microsoft", "testOneNoteEmbeddedWordDoc.one")
    prepared, _errors, _mimetype = run("testOneNoteEmbeddedWordDoc.one", data)
    assert "embedded: file1\nDude this is a super cool embedded doc. Where did you get it?" in prepared.content
    at = data.index(onenote._FILE_DATA)
    for cut in range(at, at + 64, 3):
        assert len(list(onenote.inserted_files(data[:cut]))) <= 1
    overstated = data[:at + 16] + (2**63).to_bytes(8, "little") + data[at + 24:]
    assert [name for name, _opener in onenote.inserted_files(overstated)] == ["file1"]


def test_page_date_lines_and_authors_are_metadata():
    """The date and time OneNote writes under a page's title (Tika writes them; onenote-converter does not
    return them) and the pages' authors are the document's metadata, each once, in the author's own words."""
    from beamtrawl.transforms.preparators import onenote

    assert run("testOneNote2016.one")[0].metadata.splitlines() == [
        "nicholas dipiazza", "Wednesday, December 11, 2019", "5:37 PM"]
    assert run("test-tika-4303-Chinese-notes.one")[0].metadata.splitlines() == ["Hillstone", "14:08"]
    assert "Garland, Gilda L" in run("testOneNote2007OrEarlier.one")[0].metadata
    data = tika_test_document("microsoft", "testOneNote3.one")
    assert onenote.page_dates(data) == ["Friday, November 22, 2019", "6:39 AM"]  # once, though 9 revisions say it
    line = b"Friday, November 22, 2019"
    assert onenote.page_dates(b"\x19\x00\x00\x00" + line) == ["Friday, November 22, 2019"]
    assert onenote.page_dates(b"\x18\x00\x00\x00" + line) == []  # no stored string of that length: body text
    assert onenote.page_dates(line) == [] and onenote.page_dates(b"\x05\x00\x00\x0012:30 PM") == []
