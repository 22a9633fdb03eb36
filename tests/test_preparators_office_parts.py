"""Office Open XML completeness on Apache Tika's own test documents (Maven Central, tests/package_files.py):
the parts beside a Word document's body, comments on slides, and the templates and macro-enabled variants,
each typed by its [Content_Types].xml and read."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes


def prepare(name: str):
    data = tika_test_document("microsoft", name)
    return prepare_bytes(data, f"file:///office/{name}")


def test_word_headers_footers_and_footnotes_are_text():
    prepared, errors, _ = prepare("testWORD_various.docx")
    assert errors == [] and prepared.partial == ""
    lines = prepared.content.split("\n")
    assert lines[0] == "This is the header text."  # before the body, as Tika puts it
    assert "This is the footer text." in lines and "This is a footnote." in lines
    assert "Here is a text box" in lines and "Row 1 Col 1 Row 1 Col 2 Row 1 Col 3" in lines


def test_word_runs_in_content_controls_and_cells_that_are_controls_are_text():
    """A heading's runs inside an inline content control ("BigCompany", a résumé template) and a table cell that is
    a content control: python-docx's paragraph and row readers skip both; a header's tab stays a tab."""
    prepared, errors, _ = prepare("testWORD_missing_text.docx")
    assert errors == [] and prepared.partial == ""
    lines = prepared.content.split("\n")
    assert "Experience BigCompany\t" in lines and "Cell0 Rich_text_in_cell Cell2" in lines
    prepared, errors, _ = prepare("testWORD_no_format.docx")
    assert errors == [] and "102\tAdministration och övervakning" in prepared.content.split("\n")


@pytest.mark.parametrize("name, said", [
    ("testComment.docx", "Here is a comment"),
    ("footnotes.docx", "snoska"),  # the footnote's text
    ("testComment.pptx", "Here is a comment"),
    ("testPPT_comment.pptx", "I'm afraid I'm going to have to ask you to add some content to this tps deck"),
])
def test_comments_and_notes_are_text(name, said):
    prepared, errors, _ = prepare(name)
    assert errors == [] and said in prepared.content.split("\n")


@pytest.mark.parametrize("name, mimetype, said", [
    ("testWORD_macros.docm", "application/vnd.ms-word.document.macroenabled.12", "The quick brown fox."),
    ("testWORD_template.dotx", "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
     "Getting the perfect job might be challenging"),
    ("testDOTM.dotm", "application/vnd.ms-word.template.macroenabled.12", "Грегор Мендель родился в Моравии"),
    ("testEXCEL_macro.xlsm", "application/vnd.ms-excel.sheet.macroenabled.12",
     "However, a macro is about to be created"),
    ("testEXCEL_template.xltx", "application/vnd.openxmlformats-officedocument.spreadsheetml.template",
     "this is a template"),
    ("testEXCEL_macro_enabled_template.xltm", "application/vnd.ms-excel.template.macroenabled.12",
     "this is a template"),
    ("testPPT.pptm", "application/vnd.ms-powerpoint.presentation.macroenabled.12", "Attachment Test"),
    ("testPPT.potm", "application/vnd.ms-powerpoint.template.macroenabled.12", "Attachment Test"),
    ("testPPT.ppsx", "application/vnd.openxmlformats-officedocument.presentationml.slideshow", "Attachment Test"),
    ("testPPT.ppsm", "application/vnd.ms-powerpoint.slideshow.macroenabled.12", "Attachment Test"),
])
def test_templates_and_macro_variants_are_typed_and_read(name, mimetype, said):
    """libmagic calls them DOCX, XLSX or PPTX, or a ZIP (the .potm); python-docx and python-pptx refused
    them ("is not a Word file")."""
    prepared, errors, typed = prepare(name)
    assert (errors, typed) == ([], mimetype)
    assert said in prepared.content


FORMATTED = ["| Number #,##0.00 1,599.99 -1,599.99",
             "| Currency $#,##0.00;[Red]($#,##0.00) $1,599.99 ($1,599.99)",
             "| Percentage (0.025) 3% 2.50%",
             "| Fraction (2.5) 2 1/2",
             "| Time Format: h:mm AM/PM 6:15 AM 6:15 PM",
             "| Date Format: m/d/yy 10/3/09",
             "| Date Format: d-mmm-yy 17-May-07",
             "| Custom Number: 19 dollars and .99 cents",
             "| Custom Date: At 4:20 AM on Thursday May 17, 2007"]


@pytest.mark.parametrize("name", ["testEXCEL-formats.xlsx", "testEXCEL-formats.xls"])
def test_cells_are_shown_as_their_number_formats_display_them(name):
    """Tika's sheet of number formats: dates were serial numbers, and formats were dropped."""
    prepared, errors, _ = prepare(name)
    assert errors == []
    lines = prepared.content.split("\n")
    for line in FORMATTED:
        assert line in lines, line


def test_sheet_names_are_headlines():
    prepared, errors, _ = prepare("testEXCEL.xlsx")
    assert errors == [] and prepared.headlines == ["Feuil1", "Feuil2", "Feuil3"]


def test_crawl_finds_the_variants_and_formatted_cells(tmp_path, make_config, crawl, search):
    root = tmp_path / "office"
    root.mkdir()
    names = ["testWORD_macros.docm", "testDOTM.dotm", "testPPT.ppsx", "testEXCEL_template.xltx",
             "testEXCEL-formats.xlsx", "testWORD_various.docx"]
    for name in names:
        (root / name).write_bytes(tika_test_document("microsoft", name))
    config = make_config(root)
    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))

    def found(query: str) -> list[str]:
        return sorted(hit["url"].rsplit("/", 1)[1] for hit in search(config, query))

    assert found('"The quick brown fox"') == ["testWORD_macros.docm"]
    assert found('"Грегор Мендель"') == ["testDOTM.dotm"]
    assert found('"this is a template"') == ["testEXCEL_template.xltx"]
    assert found('"At 4:20 AM on Thursday May 17, 2007"') == ["testEXCEL-formats.xlsx"]
    assert found('"This is the footer text"') == ["testWORD_various.docx"]
    assert "testPPT.ppsx" in found('"Attachment Test"')


def test_xlsb_is_read_by_calamine():
    """Before, an XLSB was a ZIP of entry names."""
    prepared, errors, mimetype = prepare("testEXCEL_various.xlsb")
    assert (errors, mimetype) == ([], "application/vnd.ms-excel.sheet.binary.macroenabled.12")
    assert prepared.headlines == ["mySheet1"]
    lines = prepared.content.split("\n")
    assert "String This is a string" in lines
    # the comments and page headers and footers calamine skips (Excel begins a note with its author's name)
    assert "Allison, Timothy B.: comment6 actually in cell" in lines and "comment8 end of file" in prepared.content
    assert "EvenLeftHeader EvenCenterHeader EvenRightHeader" in lines and "&" not in prepared.content
    prepared, errors, _ = prepare("testEXCEL.xlsb")  # Excel 2007 beta 2's, which calamine cannot open
    assert errors == [] and prepared.partial.startswith("not readable as XLSB")
    assert prepared.headlines == ["Sheet1", "Sheet2", "Sheet3"]
    assert prepared.content == "Sheet1\nThis is an example spreadsheet created with Microsoft Excel 2007 Beta 2.\nSheet2\nSheet3"
    from beamtrawl.transforms.preparators import xlsb_parts  # the same reading of a workbook calamine opens

    lines = xlsb_parts.cell_lines(zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testEXCEL_various.xlsb"))))[0]
    assert {"String This is a string", "integer 13", "currency 3.03", "formulaFloat 0.5 March April"} <= set(lines)


def test_xlsb_numbers_show_as_their_formats_display_them():
    """calamine gives a number without its format (0.2, 3.03): each cell's style in styles.bin names it, as
    Tika (POI's DataFormatter) shows it: percents, currency, dates and times as formatted."""
    lines = prepare("testEXCEL_various.xlsb")[0].content.split("\n")
    assert {"currency $3.03", "percent 20%", "float 2 13.12", "date 3/9/17"} <= set(lines)
    lines = prepare("test-columnar.xlsb")[0].content.split("\n")
    assert "3 9 This is row            3 of           10 30.00% 66.67% 22-03-1960 01Jan60 00:16:40 0:00:27" in lines


def test_xlsb_parts_cut_anywhere_are_what_was_read_before():
    """Every prefix of the real parts, and their bytes reversed, the rest of the workbook whole: never an
    exception, never more lines (comments, headers and footers, formatted cells, shared strings)."""
    from beamtrawl.transforms.preparators import xlsb_parts

    package = zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testEXCEL_various.xlsb")))

    def formatted(archive):
        return [cell for cells in xlsb_parts.number_formats(archive).values() for cell in cells]

    def cells(archive):
        return " ".join(xlsb_parts.cell_lines(archive)[0]).split()

    for part, read in (("xl/comments1.bin", xlsb_parts.comment_lines),
                       ("xl/worksheets/sheet1.bin", xlsb_parts.header_footer_lines),
                       ("xl/worksheets/sheet1.bin", formatted), ("xl/styles.bin", formatted),
                       ("xl/workbook.bin", formatted), ("xl/sharedStrings.bin", cells),
                       ("xl/worksheets/sheet1.bin", cells)):
        whole = package.read(part)
        for cut in (*range(0, len(whole), max(7, len(whole) // 50)), -1):
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as damaged:
                for name in package.namelist():
                    body = package.read(name)
                    damaged.writestr(name, body if name != part else whole[:cut] if cut >= 0 else whole[::-1])
            assert len(read(zipfile.ZipFile(buffer))) <= len(read(package)), (part, cut)


@pytest.mark.parametrize("name, phrases", [
    ("testWORD_charts.docx", ("wants a peach", "NUMBER\tJanuary\tFebruary")),
    ("testPPT_charts.pptx", ("wants a peach", "NUMBER\tJanuary\tFebruary")),
    ("testEXCEL_charts.xlsx", ("wants a peach", "is a panda")),
    ("testPPT_diagramData.pptx", ("VP – HR", "VP - Marketing")),
    ("testEXCEL_textbox.xlsx", ("this is some autoshape text",)),
])
def test_charts_smartart_and_sheet_text_boxes_are_text(name, phrases):
    """Charts' titles, series and categories, SmartArt's data and a sheet's text boxes (Tika reads them)."""
    prepared, errors, _ = prepare(name)
    assert errors == []
    for phrase in phrases:
        assert phrase in prepared.content, (name, phrase)


def test_rtf_comments_and_their_authors_are_text():
    """A comment is a word apart from the text before and after it, as Tika writes it ("commentfragilistic" was one
    word where "This is a comment" is anchored before "fragilistic")."""
    prepared, errors, _ = prepare_bytes(tika_test_document("microsoft", "testComment.rtf"), "file:///o/c.rtf")
    assert errors == [] and " ".join(prepared.content.split()) == "Here is some text MM Michael McCandless Here is a comment ."
    prepared, errors, _ = prepare_bytes(tika_test_document("microsoft", "testRTF_annotation_spacing.rtf"), "file:///o/s.rtf")
    assert errors == [] and " ".join(prepared.content.split()) == (
        "This is supercali ATB Allison, Timothy B. This is a comment fragilistic")


def test_rtf_comment_left_unclosed_or_in_a_comment_keeps_the_comments_after_it():
    """Tika's annotated file with its comment's closing brace gone: the comment took the rest of the document as
    it stood, and a comment after it, still a destination, was lost; a comment inside a comment was lost too."""
    source = tika_test_document("microsoft", "testRTF_annotation_spacing.rtf")
    closed = source.index(b"This is a comment}}}") + len(b"This is a comment")  # the comment's group and two more
    data = source[:closed] + source[closed + 3:].replace(b"fragilistic", b"fragilistic{\\*\\annotation later words}", 1)
    prepared, errors, _ = prepare_bytes(data, "file:///o/u.rtf")
    assert errors == [] and " ".join(prepared.content.split()).endswith("This is a commentfragilistic later words")
    nested = b"{\\rtf1\\ansi x {\\*\\annotation outer {\\*\\annotation inner words}}y}"
    prepared, errors, _ = prepare_bytes(nested, "file:///o/n.rtf")
    assert errors == [] and prepared.content.split() == ["x", "outer", "inner", "words", "y"]
    started = time.monotonic()  # 100,000 comments, each unclosed: one pass over the braces
    many = b"{\\rtf1\\ansi " + b"".join(b"w%d {\\*\\annotation c%d {\\b b} a%d\\par\n" % (n, n, n) for n in range(100_000))
    prepared, errors, _ = prepare_bytes(many + b"}", "file:///o/m.rtf")
    assert errors == [] and prepared.content.split()[-4:] == ["w99999", "c99999", "b", "a99999"]
    assert time.monotonic() - started < 10


def test_workbook_past_max_characters_is_read_to_there_and_says_so():
    """testRecordSizeExceeded.xlsx holds 181 million characters of cells (12 MB zipped): read whole it took
    longer than the preparation timeout and kept nothing; now its first max_characters are kept, quickly."""
    from beamtrawl.transforms.preparators import office

    data = tika_test_document("microsoft", "testRecordSizeExceeded.xlsx")
    prepared = office.prepare_ooxml(data, "file:///o/big.xlsx", office.MIME_TYPES[1], {"max_characters": 100_000})
    assert 100_000 < len(prepared.content) < 110_000
    assert "Repetitive content pattern 1 for compression test row 1" in prepared.content
    assert prepared.partial.startswith("read the first ") and "max_characters (100,000)" in prepared.partial


def test_phonetic_readings_follow_their_strings():
    """Furigana (``<rPh>``) in the shared strings: openpyxl drops them, and a search in kana missed 本田."""
    prepared, errors, _mimetype = prepare_bytes(tika_test_document("microsoft", "testEXCEL_phonetic.xlsx"),
                                                "file:///sheets/testEXCEL_phonetic.xlsx")
    assert errors == [] and "本田車株式会社 ホンダ クルマ カブシキ カイシャ" in prepared.content.splitlines()


def test_sheet_headers_and_footers_are_text_without_their_codes():
    """``&LHeader - Corporate Spreadsheet&CHeader - For Internal Use Only``: openpyxl's read-only mode skips them."""
    prepared, errors, _mimetype = prepare_bytes(tika_test_document("microsoft", "testEXCEL_headers_footers.xlsx"),
                                                "file:///sheets/testEXCEL_headers_footers.xlsx")
    assert errors == [] and ("Footer - Corporate Spreadsheet Footer - For Internal Use Only Footer - Author: John Smith"
                             in prepared.content.splitlines())


def test_pictures_alternative_text_is_furniture():
    """A picture's alternative text (the author's description, or the inserted file's name Word, Excel and PowerPoint
    put there) is searched through the furniture field, each once;
    a picture deleted with changes tracked gives none."""
    assert prepare("testPPT_2imgs.pptx")[0].furniture == "alfresco-logo.png\ntestGIF.gif"
    assert prepare("testWORD_1img.docx")[0].furniture == "A description..."
    assert prepare("testEXCEL_1img.xlsx")[0].furniture == "alfresco-logo.png"  # a picture over a sheet
    assert prepare("testEXCEL_hyperlinks.xlsx")[0].furniture.splitlines() == [  # and cells' links' targets
        "linked_file.txt.htm", "mailto:user@tika.apache.org?subject=help", "http://tika.apache.org/"]
    pictures = prepare("testWORD_embedded_pics.docx")[0].furniture.splitlines()
    assert [p.rsplit("\\", 1)[1] for p in pictures] == ["body_pic.jpg", "sdt_pic.jpg"]  # not deleted_pic.jpg
    assert "A description" not in prepare("testWORD_1img.docx")[0].content


def test_a_workbooks_drawings_and_comments_are_read_within_the_drawing_parts_bounds():
    """A workbook's drawings (pictures' alternative text) and comments are read as its charts are
    (``drawing_text.bounded_parts``): a part over 4 MiB is skipped, not read and parsed whole, and the others are
    still read."""
    spread = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
    kept = f'<xdr:wsDr xmlns:xdr="{spread}"><xdr:pic><xdr:nvPicPr><xdr:cNvPr id="9" name="p" descr="kept picture"/>' \
           f'</xdr:nvPicPr></xdr:pic></xdr:wsDr>'
    huge = f'<xdr:wsDr xmlns:xdr="{spread}">' + '<xdr:cNvPr descr="too large"/>' * 200_000 + "</xdr:wsDr>"
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testEXCEL_1img.xlsx"))) as source, \
            zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, source.read(info))
        target.writestr("xl/drawings/drawing7.xml", kept)
        target.writestr("xl/drawings/drawing8.xml", huge)  # 6 MB
    prepared, errors, _mimetype = prepare_bytes(buffer.getvalue(), "file:///sheets/bounded.xlsx")
    assert errors == [] and prepared.furniture.splitlines() == ["alfresco-logo.png", "kept picture"]


def test_a_workbooks_unreadable_drawing_or_comments_part_costs_that_part_and_says_so():
    """A drawing part flagged encrypted (zipfile raises RuntimeError) lost the whole workbook, and a comments part that
    is no XML lost its comments without a word (found by the red team). Now the cells are read, and the report line
    names the comments part."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testEXCEL_1img.xlsx"))) as source, \
            zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, source.read(info))
        target.writestr("xl/comments1.xml", "<comments><commentList><comment><text><t>lost")  # never closed
        target.writestr("xl/drawings/drawing9.xml", "<wsDr/>")
    data = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("xl/drawings/drawing9.xml")
    data[info.header_offset + 6] |= 1  # the encrypted flag, in the local header and in the central directory
    data[data.rfind(b"xl/drawings/drawing9.xml") - 46 + 8] |= 1  # (the directory's entry: 46 bytes, then the name)
    prepared, errors, _mimetype = prepare_bytes(bytes(data), "file:///sheets/damaged.xlsx")
    assert errors == [] and prepared.furniture == "alfresco-logo.png"
    assert prepared.content.strip() and "1 comments parts not read (xl/comments1.xml: ParseError" in prepared.partial
