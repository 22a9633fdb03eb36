"""Hostile files for the long-tail preparators (RTF, TNEF, HWP, iWork, OOXML drawings), from a red-team pass:
each is read or refused in well under the preparing timeout, with one failure line, and what is good in
the file survives. Figures in the docstrings are what each file cost before its fix."""

from __future__ import annotations

import io
import struct
import time
import zipfile

from beamtrawl.transforms.preparators.drawing_text import part_text
from beamtrawl.transforms.preparators.hwp import paragraph_text

from tests.preparing import prepare_bytes

TNEF_HEAD = b"\x78\x9f\x3e\x22\x01\x00"


def _attribute(level: int, name: int, kind: int, data: bytes) -> bytes:
    return struct.pack("<BHHI", level, name, kind, len(data)) + data + struct.pack("<H", sum(data) & 0xFFFF)


_VERSION = _attribute(1, 0x9006, 0x0008, struct.pack("<I", 0x00010000)) + _attribute(1, 0x9007, 0x0006,
                                                                                       struct.pack("<II", 1252, 0))
_SUBJECT = _attribute(1, 0x8004, 0x0001, b"Hostile subject\x00")
_KEPT = (_attribute(2, 0x9002, 0x0006, b"\x01\x00\xff\xff\xff\xff") + _attribute(2, 0x8010, 0x0001, b"keep.txt\x00")
         + _attribute(2, 0x800F, 0x0006, b"attachment words survive"))


def _quick(data: bytes, url: str):
    started = time.monotonic()
    found = prepare_bytes(data, url)
    return found, time.monotonic() - started


def test_an_rtf_title_that_never_closes_is_linear():
    """84 bytes took 6 s, five times more per control word: 40 control words now take no time at all."""
    data = b"{\\rtf1{\\info{\\title " + b"\\abcd" * 40 + b"{}}}body text}"
    (prepared, errors, _), seconds = _quick(data, "file:///t/x.rtf")
    assert "body text" in prepared.content and not errors and seconds < 10


def test_a_tnef_property_count_beyond_its_bytes_is_refused():
    """A 63-byte file with 4,294,967,295 properties would have kept tnefparse looping for nine hours."""
    data = TNEF_HEAD + _VERSION + _SUBJECT + _attribute(1, 0x9003, 0x0006, b"\xff\xff\xff\xff")
    (_prepared, errors, _), seconds = _quick(data, "file:///t/winmail.dat")
    assert "4,294,967,295 properties in 4 bytes" in " ".join(map(str, errors)) and seconds < 10


def test_a_tnef_file_of_tiny_attributes_is_refused_not_copied_quadratically():
    data = TNEF_HEAD + _VERSION + _attribute(1, 0x8004, 0x0001, b"") * 300_000
    (_prepared, errors, _), seconds = _quick(data, "file:///t/winmail.dat")
    assert "TNEF attributes in" in " ".join(map(str, errors)) and seconds < 10


def test_a_tnef_body_that_does_not_decompress_keeps_the_attachments():
    rtf = struct.pack("<IIII", 28, 100, 0x75465A4C, 0xDEADBEEF) + b"\x00" * 16  # "LZFu", a wrong CRC
    mapi = struct.pack("<IHHII", 1, 0x0102, 0x1009, 1, len(rtf)) + rtf
    data = TNEF_HEAD + _VERSION + _SUBJECT + _attribute(1, 0x9003, 0x0006, mapi) + _KEPT
    prepared, errors, _ = prepare_bytes(data, "file:///t/winmail.dat")
    assert prepared.title == "Hostile subject" and "attachment words survive" in prepared.content, errors


def test_nested_drawing_paragraphs_give_each_run_once():
    """Each level repeated the text of all below it: a 37 KB chart became 12 MB of text."""
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    xml = f'<c:chartSpace xmlns:c="x" xmlns:a="{a}">' + "<a:p><a:r><a:t>w</a:t></a:r>" * 3000 + "</a:p>" * 3000
    assert part_text((xml + "</c:chartSpace>").encode()) == "w"
    assert part_text(f'<r xmlns:a="{a}"><a:p><a:r><a:t>Sales </a:t></a:r><a:r><a:t>2024</a:t></a:r></a:p></r>'
                     .encode()) == "Sales 2024"


def test_hwp_paragraph_text_skips_extended_controls_and_keeps_pairs():
    """Decoded at once now (a tuple of every code unit made a 64 MB record take 4.4 GB)."""
    extended = struct.pack("<8H", 11, 0x6F73, 0x6C63, 0, 0, 0, 0, 11)  # a table's control: eight units
    body = "가a".encode("utf-16-le") + extended + "\U0001F600b".encode("utf-16-le") + struct.pack("<H", 13)
    assert paragraph_text(body) == "가a\U0001F600b\n"


def test_iwork_xml_nested_too_deep_is_one_failure():
    root = (b'<sl:document xmlns:sl="http://developer.apple.com/namespaces/sl" '
            b'xmlns:sf="http://developer.apple.com/namespaces/sf">')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("index.xml", root + b"<sf:p>" * 5000 + b"deep" + b"</sf:p>" * 5000 + b"</sl:document>")
    _prepared, errors, mimetype = prepare_bytes(buffer.getvalue(), "file:///t/deep.pages")
    assert mimetype == "application/vnd.apple.pages" and "nested too deep" in " ".join(map(str, errors)), errors


def test_unterminated_mif_strings_are_linear():
    """4,000 strings without their closing quote took 30 s, one 20 MB string 3.3 GB."""
    from beamtrawl.transforms.preparators.mif import mif_text

    started = time.monotonic()
    mif_text("<MIFFile 2015>\n" + "<Para <ParaLine <String `x\n" * 40_000 + "<String `" + "y" * 5_000_000)
    assert mif_text("<MIFFile 2015>\n<Para <ParaLine <String `kept words'>>>\n") == "kept words"
    assert time.monotonic() - started < 10


def test_mif_escapes_are_frame_roman():
    """Latin-1 made typographic quotes letters that glued words together, and é a control character."""
    from beamtrawl.transforms.preparators.mif import mif_text

    text = "<MIFFile 2015>\n<Para <ParaLine <String `don\\xd5 t say \\xd2hello\\xd3  caf\\x8e \\x11 end'>>>\n"
    assert mif_text(text) == "don’t say “hello” café end"
