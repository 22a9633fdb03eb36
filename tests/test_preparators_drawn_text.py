"""What only Tika read before (issue 24): text drawn in Windows metafiles (EMF, WMF) and so the pictures
Office keeps of linked and inserted files, of charts and of documents (thumbnails); XLS text boxes and chart
titles; PowerPoint 97 comments; Publisher and Visio files; MATLAB data files; PDF annotations' authors.
Real files are Tika's test documents (their phrases, and the crawl that finds them, are in
test_preparators_long_tail.py's FILES); the hostile ones are built here, one per boundary."""

from __future__ import annotations

import io
import struct
import time
import zipfile
import zlib

import pytest
from beamtrawl.transforms.preparators import matlab, metafile, visio, xls_drawing
from beamtrawl.transforms.preparators.base import PreparationError

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes


def prepare(module: str, name: str):
    prepared, errors, mimetype = prepare_bytes(tika_test_document(module, name), f"file:///drawn/{name}")
    assert errors == [], errors
    return prepared, mimetype


@pytest.mark.parametrize("name, part", [
    ("Doc1_ole.doc", "embedded: ObjectPool/_1310388059/picture.emf\nMSj00974840000[1].wav"),  # an inserted file's icon
    ("testDocumentLink.doc", "embedded: ObjectPool/_1327495610/picture.emf\nBusiness Analytics"),  # a link's page
    ("testDOCX_Thumbnail.docx", "embedded: docProps/thumbnail.emf\nThis file contains a thumbnail"),
    ("testRTFEmbeddedLink.rtf", "embedded: picture 1.emf\nThis is the header for our document"),
    ("testMSChart-govdocs-428996.xls", "embedded: picture 1.emf\n0\n2000\n4000"),  # an MS Graph chart's axis
    ("testMSChart-govdocs-428996.xlsx", "embedded: xl/media/image1.emf\n0\n2000\n4000"),
])
def test_pictures_drawn_as_metafiles_are_parts_named_where_the_container_keeps_them(name, part):
    prepared, _ = prepare("microsoft", name)
    assert part in prepared.content


def test_the_pdf_mac_office_keeps_inside_an_emf_is_prepared_by_its_type():
    with zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testEXCEL_embeddedPDF_mac.xlsx"))) as package:
        picture = package.read("xl/media/image1.emf")
    prepared, errors, mimetype = prepare_bytes(picture, "file:///drawn/image1.emf")
    assert (errors, mimetype) == ([], "image/emf")
    drawn, pdf = prepared.content.split("\n\nembedded: embedded1.pdf\n")
    assert "Tika - Content Analysis Toolkit" in drawn  # drawn one character at a time, glued back into words
    assert "Apache Tika is a toolkit for detecting" in " ".join(pdf.split())


def test_wmf_strings_are_read_in_the_code_page_of_their_font():
    prepared, mimetype = prepare("microsoft", "testWMF_charset.wmf")
    assert mimetype == "image/wmf" and "普林斯" in prepared.content


def test_xls_text_boxes_chart_titles_and_sheet_names_as_headlines():
    prepared, _ = prepare("microsoft", "testEXCEL-charts.xls")
    assert prepared.headlines == ["Sheet1", "Sheet2"]  # xlrd does not list the chart sheet
    assert prepared.content.endswith("WhamPuff\nYottaPuff\neksaxis\nwhyaxis\nfizzlepuff")
    prepared, _ = prepare("microsoft", "testEXCEL_textbox.xls")
    assert prepared.content.split("\n")[-1] == "this is some autoshape text"


def test_matlab_variables_are_listed_with_size_and_class_and_the_header_is_metadata():
    prepared, _ = prepare("code", "test_mat_text.mat")
    assert prepared.content == "double: [2x2 double array]"
    assert prepared.metadata == "MATLAB 5.0 MAT-file, Platform: MACI64, Created on: Wed Jun 4 14:54:43 2014"
    prepared, _ = prepare("code", "breidamerkurjokull_radar_profiles_2009.mat")
    lines = prepared.content.split("\n")
    assert len(lines) == 36 and lines[:2] == ["a1: [1x1 struct array]", "\tx: [1x1261 double array]"]


def test_visio_without_vsd2text_names_the_package(monkeypatch, tmp_path):
    from tests.test_helper_programs import _path_without

    monkeypatch.setenv("PATH", _path_without("vsd2text", tmp_path / "bin"))
    with pytest.raises(PreparationError, match=r"^vsd2text is not installed \(Debian package libvisio-tools\)$"):
        visio.prepare_visio(tika_test_document("microsoft", "testVISIO.vsd"), "file:///v.vsd", "", dict(visio.DEFAULTS))


# Hostile files: each is read as far as it is sound, with a report line, in well under a second.

def _emf_record(kind: int, body: bytes) -> bytes:
    return struct.pack("<II", kind, 8 + len(body)) + body


def _emf_text(text: str, baseline: int) -> bytes:
    encoded = text.encode("utf-16-le")
    fixed = bytes(16) + struct.pack("<Iff", 1, 1.0, 1.0) + struct.pack("<iiIII", 0, baseline, len(text), 76, 0)
    fixed += bytes(16) + struct.pack("<I", 0)  # the rectangle, no advances
    return _emf_record(84, fixed + encoded + bytes(-len(encoded) % 4))


EMF_HEADER = _emf_record(1, bytes(32) + b" EMF" + bytes(64))


def _quick(data: bytes, url: str):
    started = time.monotonic()
    found = prepare_bytes(data, url)
    return found, time.monotonic() - started


def test_an_emf_record_running_past_the_end_keeps_the_text_before_it():
    data = EMF_HEADER + _emf_text("kept words", 10) + struct.pack("<II", 84, 0x7FFFFFF0) + bytes(40)
    (prepared, errors, mimetype), seconds = _quick(data, "file:///h/x.emf")
    assert (errors, mimetype, prepared.content) == ([], "image/emf", "kept words") and seconds < 1
    assert prepared.partial.startswith("EMF damaged: a record of 2147483632 bytes")
    for size in (0, 7, 9):  # a record that cannot advance, or is not aligned
        assert metafile.metafile_text(EMF_HEADER + _emf_text("a", 1) + struct.pack("<II", 84, size)) == "a"


def test_an_emf_string_claiming_more_characters_than_its_record_holds_is_cut_there():
    record = bytearray(_emf_text("short", 5))
    struct.pack_into("<I", record, 44, 0xFFFFFFFF)
    assert metafile.metafile_text(EMF_HEADER + bytes(record)) == "short"


def test_a_wmf_whose_records_break_off_is_read_to_there():
    header = struct.pack("<HHHIHIH", 1, 9, 0x300, 0, 0, 0, 0)
    text = struct.pack("<IHH", 6, 0x0521, 4) + b"word" + struct.pack("<hh", 0, 0)
    data = header + text + struct.pack("<IH", 0xFFFFFFFF, 0x0521)
    prepared, errors, mimetype = prepare_bytes(data, "file:///h/x.wmf")
    assert (errors, mimetype, prepared.content) == ([], "image/wmf", "word")
    assert prepared.partial.startswith("WMF damaged")


def test_rtf_pictures_nested_in_pictures_are_scanned_once():
    data = b"{\\rtf1 text " + b"{\\pict\\emfblip " * 20000 + b"}" * 20000 + b"}"
    (prepared, errors, _), seconds = _quick(data, "file:///h/x.rtf")
    assert not errors and "text" in prepared.content and seconds < 5


def test_rtf_picture_with_a_huge_bin_length_and_odd_hex_is_harmless():
    data = b"{\\rtf1 words {\\pict\\wmetafile8 abc\\bin99999999999 x} more}"
    (prepared, errors, _), seconds = _quick(data, "file:///h/x.rtf")
    assert not errors and "words" in prepared.content and seconds < 1


def _biff(kind: int, data: bytes) -> bytes:
    return struct.pack("<HH", kind, len(data)) + data


def test_xls_text_box_without_its_text_and_a_blip_claiming_gigabytes_are_bounded():
    txo = _biff(0x01B6, bytes(10) + struct.pack("<H", 65535) + bytes(6))  # 65,535 characters, none follow
    header = bytes(16) + struct.pack("<I", 0xFFFFFFFF) + bytes(24) + b"\x00\x00"  # UID, then "4 GB" deflated
    blip = struct.pack("<HHI", 0x3D4 << 4, 0xF01A, len(header) + 16) + header + zlib.compress(b"\0" * 16)[:16]
    group = _biff(0x00EB, struct.pack("<HHI", 0xF, 0xF000, len(blip)) + blip)
    drawing = xls_drawing.read_drawing(group + txo + _biff(0x000A, b""))
    sizes = [len(opener().read()) for _, opener in drawing.pictures]  # what the 16 deflated bytes hold, no more
    assert drawing.texts == [] and len(sizes) == 1 and sizes[0] <= 16


def _mat(*elements: bytes) -> bytes:
    return b"MATLAB 5.0 MAT-file, hostile".ljust(124, b" ") + b"\x00\x01IM" + b"".join(elements)


def _element(kind: int, data: bytes) -> bytes:
    return struct.pack("<II", kind, len(data)) + data + bytes(-len(data) % 8)


def _matrix(kind: int, dims: tuple[int, ...], name: bytes, rest: bytes = b"") -> bytes:
    body = (_element(6, struct.pack("<II", kind, 0)) + _element(5, struct.pack(f"<{len(dims)}i", *dims))
            + _element(1, name) + rest)
    return _element(14, body)


def test_matlab_bombs_counts_and_nesting_end_the_listing_with_a_report_line(monkeypatch):
    monkeypatch.setattr(matlab, "_MAX_INFLATED", 1024**2)  # 256 MiB as shipped: the same bound, made small here
    fields = _element(5, struct.pack("<i", 2)) + _element(1, b"a\0")
    zeros = _matrix(2, (1, 1), b"s", fields + _matrix(6, (1, 1), b"", _element(9, bytes(4 * 1024**2))))
    prepared = matlab.prepare_matlab(_mat(_element(15, zlib.compress(zeros, 9))), "file:///h/bomb.mat", "", {})
    assert prepared.content == "s: [1x1 struct array]\n\ta: [1x1 double array]"
    assert prepared.partial == "MATLAB file listed partially: more than 1048576 bytes inflated"
    fields = _element(5, struct.pack("<i", 4)) + _element(1, b"abc\0")
    many = _matrix(2, (2**31 - 1, 2**31 - 1), b"s", fields)  # a struct of 4.6e18 elements, none stored
    prepared = matlab.prepare_matlab(_mat(many), "file:///h/many.mat", "", {})
    assert prepared.content.startswith("s: [2147483647x2147483647 struct array]") and prepared.partial
    nested = _matrix(6, (1, 1), b"leaf")
    for _ in range(20):
        nested = _matrix(1, (1, 1), b"c", nested)
    prepared = matlab.prepare_matlab(_mat(nested), "file:///h/deep.mat", "", {})
    assert "more than 8 levels" in prepared.partial


def test_matlab_files_that_are_not_version_5_to_7_are_refused_by_name():
    with pytest.raises(PreparationError, match="HDF5"):
        matlab.prepare_matlab(b"MATLAB 7.3 MAT-file".ljust(124, b" ") + b"\x00\x02IM", "file:///h/x.mat", "", {})
    with pytest.raises(PreparationError, match="no 128-byte 'MATLAB 5.0 MAT-file' header"):
        matlab.prepare_matlab(_mat()[:100], "file:///h/cut.mat", "", {})


def test_tables_nested_in_cells_merged_across_rows_are_read_once():
    """Each level's cell is merged across 30 rows; reading the nested table once per row would be 30**12."""
    import docx

    document = docx.Document()
    table = document.add_table(rows=30, cols=1)
    for level in range(12):
        cell = table.cell(0, 0).merge(table.cell(29, 0))
        cell.paragraphs[0].text = f"level{level}"
        table = cell.add_table(rows=30, cols=1)
    table.cell(0, 0).text = "innermost words"
    out = io.BytesIO()
    document.save(out)
    (prepared, errors, _), seconds = _quick(out.getvalue(), "file:///h/nested.docx")
    assert not errors and seconds < 5
    assert prepared.content.count("innermost words") == 1 and "level0" in prepared.content


def test_a_blip_store_entry_cut_short_costs_the_pictures_not_the_cells():
    fbse = struct.pack("<HHI", 0x2, 0xF007, 36) + bytes(20)  # declares 36 bytes, holds 20: the stream ends
    assert xls_drawing.read_drawing(_biff(0x00EB, fbse)).pictures == []


def test_a_word_drawn_one_character_at_a_time_costs_linear_time():
    # 800,000 characters drawn one by one on one baseline (11 MB of WMF): glued by += they took 10 s of CPU and
    # 40 s of wall time (160 s for twice as many), now 2 s
    record = struct.pack("<IHH", 7, 0x0521, 1) + b"x\0" + bytes(4)
    wmf = struct.pack("<HHHIHIH", 1, 9, 0x300, 0, 0, 0, 0) + record * 800_000
    started = time.process_time()
    assert metafile.metafile_text(wmf) == "x" * 800_000
    assert time.process_time() - started < 5
    assert metafile.metafile_text(EMF_HEADER + _emf_text("x", 7) * 3 + _emf_text("y", 8)) == "xxx\ny"


def test_text_boxes_continued_one_character_per_record_cost_linear_time():
    # 40 boxes of 65,535 characters, each in its own CONTINUE record (16 MB): joined by += they took 4 s of CPU on a
    # quiet machine; joined once, 1.7 s (2.5 s in a full suite's run, which failed a bound of 2)
    box = _biff(0x01B6, bytes(10) + struct.pack("<H", 65535) + bytes(6)) + _biff(0x003C, b"\0x") * 65535
    started = time.process_time()
    assert xls_drawing.read_drawing(box * 40).texts == ["x" * 65535] * 40
    assert time.process_time() - started < 3.5
