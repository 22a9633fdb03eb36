"""EPUB and audio preparators on real files made here: EPUBs written by hand with zipfile, MP3, Ogg
Vorbis and FLAC synthesised by sox (Debian packages ``sox`` and ``libsox-fmt-mp3``) and tagged with
mutagen, and an M4A whose MP4 boxes are written by hand (sox cannot write MP4)."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import magic
import pytest
from beamtrawl.transforms.preparators import PreparationError, Prepared, audio, epub
from beamtrawl.transforms.preparators.audio import prepare_audio
from beamtrawl.transforms.preparators.epub import prepare_epub
from mutagen.flac import FLAC
from mutagen.id3 import COMM, ID3, TALB, TCON, TDRC, TIT2, TPE1
from mutagen.mp4 import MP4
from mutagen.oggvorbis import OggVorbis


def _mime(data: bytes) -> str:
    return magic.from_buffer(data, mime=True)


# -- EPUB ------------------------------------------------------------------------------------------------

CONTAINER = b"""<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""

OPF = b"""<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:12345678-1234-1234-1234-123456789abc</dc:identifier>
    <dc:title>The Rotor Book</dc:title>
    <dc:creator>Ada Lovelace</dc:creator>
    <dc:creator>Charles Babbage</dc:creator>
    <dc:subject>Centrifuges</dc:subject>
    <dc:description>&lt;p&gt;A &lt;b&gt;careful&lt;/b&gt; guide.&lt;/p&gt;</dc:description>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="css" href="style.css" media-type="text/css"/>
    <item id="c2" href="Text/chapter%202.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="Text/chapter%201.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>"""


def _chapter(title: str, h1: str, h2: str, text: str) -> bytes:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title>
<link rel="stylesheet" href="../style.css"/></head>
<body><h1>{h1}</h1><p>{text}</p><h2>{h2}</h2><p>Read the {h2.lower()} twice.</p></body></html>""".encode()


def _epub(entries: dict[str, bytes] | None = None, *, mimetype_first: bool = True) -> bytes:
    files = {"META-INF/container.xml": CONTAINER, "OEBPS/content.opf": OPF,
             "OEBPS/nav.xhtml": b"<html xmlns='http://www.w3.org/1999/xhtml'><body>nav</body></html>",
             "OEBPS/style.css": b"h1 { color: red }",
             "OEBPS/Text/chapter 1.xhtml": _chapter("One", "Balancing", "Checklist",
                                                     "Balance the rotor before every run."),
             "OEBPS/Text/chapter 2.xhtml": _chapter("Two", "Opening the lid", "Gloves",
                                                     "Wear gloves when you open the lid.")}
    files.update(entries or {})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if mimetype_first:
            archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, data in files.items():
            if data is not None:
                archive.writestr(name, data)
    return buffer.getvalue()


def test_epub_is_detected_by_libmagic():
    assert _mime(_epub()) == "application/epub+zip"
    assert _mime(_epub()) in epub.MIME_TYPES


def test_epub_title_metadata_and_chapters_in_spine_order():
    prepared = prepare_epub(_epub(), "file:///books/rotor.epub", "application/epub+zip", {})
    assert prepared.title == "The Rotor Book"
    assert prepared.metadata == "Ada Lovelace Charles Babbage Centrifuges A careful guide. en"
    assert prepared.headlines == ["Balancing", "Checklist", "Opening the lid", "Gloves"]
    content = prepared.content
    assert "Balance the rotor before every run." in content
    assert "Wear gloves when you open the lid." in content
    assert content.index("Balance the rotor") < content.index("Wear gloves")  # spine, not manifest, order
    assert "nav" not in content.split()  # not in the spine
    assert "color" not in content  # CSS is not a chapter


def test_epub_chapter_bytes_are_bounded():
    size = len(_chapter("One", "Balancing", "Checklist", "Balance the rotor before every run."))
    prepared = prepare_epub(_epub(), "file:///rotor.epub", "application/epub+zip", {"max_bytes": size})
    assert "Balance the rotor" in prepared.content
    assert "Wear gloves" not in prepared.content
    assert "Gloves" not in prepared.headlines


def test_epub_without_dc_title_takes_the_first_chapter_title():
    opf = OPF.replace(b"<dc:title>The Rotor Book</dc:title>", b"")
    prepared = prepare_epub(_epub({"OEBPS/content.opf": opf}), "file:///r.epub", "application/epub+zip", {})
    assert prepared.title == "One"


def test_epub_spine_item_missing_from_archive_is_skipped():
    prepared = prepare_epub(_epub({"OEBPS/Text/chapter 1.xhtml": None}), "file:///r.epub",
                            "application/epub+zip", {})
    assert "Wear gloves" in prepared.content
    assert "Balance the rotor" not in prepared.content


@pytest.mark.parametrize("data", [
    pytest.param(_epub()[:300], id="truncated"),
    pytest.param(b"PK\x03\x04 certainly not a zip", id="garbage"),
    pytest.param(_epub({"META-INF/container.xml": None}), id="no-container"),
    pytest.param(_epub({"OEBPS/content.opf": None}), id="no-opf"),
    pytest.param(_epub({"OEBPS/content.opf": b"<package><metadata>"}), id="malformed-opf"),
    pytest.param(_epub({"META-INF/container.xml": b"<container/>"}), id="no-rootfile"),
    pytest.param(_epub({"OEBPS/content.opf": b'<!DOCTYPE p [<!ENTITY a "aaaa">]><package>&a;</package>'}),
                 id="entity-in-opf"),
])
def test_corrupt_epub_raises(data):
    with pytest.raises(PreparationError) as raised:
        prepare_epub(data, "file:///bad.epub", "application/epub+zip", {})
    assert "\n" not in str(raised.value)


# -- Audio -----------------------------------------------------------------------------------------------

def _sox(tmp_path: Path, suffix: str, seconds: float = 2.5) -> Path:
    assert shutil.which("sox"), "the tests need Debian's sox and libsox-fmt-mp3"
    path = tmp_path / f"tone.{suffix}"
    subprocess.run(["sox", "-n", "--comment", "", "-r", "8000", "-c", "1", str(path),
                    "synth", str(seconds), "sine", "440"], check=True, capture_output=True)
    return path


def _prepare(data: bytes) -> Prepared:
    mimetype = _mime(data)
    assert mimetype in audio.MIME_TYPES
    return prepare_audio(data, "file:///music/tone", mimetype, {})


def _kbps(content: str) -> int:
    return int(content.rsplit(", ", 1)[1].removesuffix("kbps"))


def test_mp3_with_id3v2(tmp_path):
    path = _sox(tmp_path, "mp3", 65)
    tags = ID3()
    tags.add(TPE1(encoding=3, text="Nina Simone"))
    tags.add(TALB(encoding=3, text="Pastel Blues"))
    tags.add(TIT2(encoding=3, text="Sinnerman"))
    tags.add(TDRC(encoding=3, text="1965-10-01"))
    tags.add(TCON(encoding=3, text="Jazz"))
    tags.add(COMM(encoding=3, lang="eng", desc="", text="Ten minutes long"))
    tags.save(path)
    data = path.read_bytes()
    assert _mime(data) == "audio/mpeg"
    prepared = _prepare(data)
    assert prepared.title == "Nina Simone - Sinnerman"
    assert prepared.content.startswith("Nina Simone, Pastel Blues, Sinnerman, 1965, 01:05, ")
    assert _kbps(prepared.content) > 0
    assert prepared.metadata == "Jazz Ten minutes long"


def test_mp3_with_id3v1_only(tmp_path):
    def field(text: str, size: int) -> bytes:
        return text.encode("latin-1").ljust(size, b"\0")
    tag = (b"TAG" + field("Blue in Green", 30) + field("Miles Davis", 30) + field("Kind of Blue", 30)
           + b"1959" + field("Modal", 30) + bytes([8]))  # genre 8 = Jazz
    data = _sox(tmp_path, "mp3").read_bytes() + tag
    assert _mime(data) == "audio/mpeg"
    prepared = _prepare(data)
    assert prepared.title == "Miles Davis - Blue in Green"
    assert prepared.content.startswith("Miles Davis, Kind of Blue, Blue in Green, 1959, 00:02, ")
    assert prepared.metadata == "Jazz Modal"


def test_mp3_without_tags_gives_length_and_bitrate(tmp_path):
    data = _sox(tmp_path, "mp3").read_bytes()
    assert not data.startswith(b"ID3")
    prepared = _prepare(data)
    assert prepared.title == "" and prepared.metadata == ""
    assert prepared.content.startswith("00:02, ") and prepared.content.endswith("kbps")


def test_mp3_with_only_an_artist(tmp_path):
    path = _sox(tmp_path, "mp3")
    tags = ID3()
    tags.add(TPE1(encoding=3, text="Anonymous"))
    tags.save(path)
    prepared = _prepare(path.read_bytes())
    assert prepared.title == "Anonymous"
    assert prepared.content.startswith("Anonymous, 00:02, ")


@pytest.mark.parametrize("suffix,kind,mimetype", [("ogg", OggVorbis, "audio/ogg"),
                                                  ("flac", FLAC, "audio/flac")])
def test_vorbis_comments(tmp_path, suffix, kind, mimetype):
    path = _sox(tmp_path, suffix)
    tagged = kind(path)
    tagged.update({"artist": "Arvo Pärt", "album": "Alina", "title": "Spiegel im Spiegel",
                   "date": "1999", "genre": "Classical", "comment": "Violin and piano"})
    tagged.save()
    data = path.read_bytes()
    assert _mime(data) == mimetype
    prepared = _prepare(data)
    assert prepared.title == "Arvo Pärt - Spiegel im Spiegel"
    assert prepared.content.startswith("Arvo Pärt, Alina, Spiegel im Spiegel, 1999, 00:02, ")
    assert _kbps(prepared.content) > 0
    assert prepared.metadata == "Classical Violin and piano"


@pytest.mark.parametrize("suffix", ["ogg", "flac"])
def test_vorbis_without_tags_gives_length(tmp_path, suffix):
    prepared = _prepare(_sox(tmp_path, suffix).read_bytes())
    assert prepared.title == "" and prepared.metadata == ""
    assert prepared.content.startswith("00:02, ") and prepared.content.endswith("kbps")


# An M4A by hand: ftyp, and a moov with one sound track whose mp4a entry declares AAC at 128 kbps.
def _box(kind: bytes, payload: bytes = b"") -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def _full(kind: bytes, payload: bytes, flags: int = 0) -> bytes:
    return _box(kind, struct.pack(">I", flags) + payload)


def _descriptor(tag: int, payload: bytes) -> bytes:
    return bytes([tag, len(payload)]) + payload


_MATRIX = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)


def _m4a(seconds: int = 3725, rate: int = 44100, bitrate: int = 128000) -> bytes:
    duration = seconds * rate
    mvhd = _full(b"mvhd", struct.pack(">4I", 0, 0, rate, duration) + struct.pack(">IH10x", 0x10000, 0x100)
                 + _MATRIX + bytes(24) + struct.pack(">I", 2))
    tkhd = _full(b"tkhd", struct.pack(">5I", 0, 0, 1, 0, duration) + bytes(8)
                 + struct.pack(">hhH2x", 0, 0, 0x100) + _MATRIX + struct.pack(">II", 0, 0), flags=7)
    mdhd = _full(b"mdhd", struct.pack(">4IHH", 0, 0, rate, duration, 0x55C4, 0))
    hdlr = _full(b"hdlr", struct.pack(">I4s12x", 0, b"soun") + b"SoundHandler\0")
    decoder = _descriptor(4, struct.pack(">BB3sII", 0x40, 0x15, bytes(3), bitrate, bitrate)
                          + _descriptor(5, b"\x12\x10"))
    esds = _full(b"esds", _descriptor(3, struct.pack(">HB", 1, 0) + decoder + _descriptor(6, b"\x02")))
    mp4a = _box(b"mp4a", bytes(6) + struct.pack(">H", 1) + bytes(8)
                + struct.pack(">HHHHI", 2, 16, 0, 0, rate << 16) + esds)
    stbl = _box(b"stbl", _full(b"stsd", struct.pack(">I", 1) + mp4a) + _full(b"stts", struct.pack(">I", 0))
                + _full(b"stsc", struct.pack(">I", 0)) + _full(b"stsz", struct.pack(">II", 0, 0))
                + _full(b"stco", struct.pack(">I", 0)))
    dinf = _box(b"dinf", _full(b"dref", struct.pack(">I", 1) + _full(b"url ", b"", flags=1)))
    minf = _box(b"minf", _full(b"smhd", struct.pack(">HH", 0, 0)) + dinf + stbl)
    moov = _box(b"moov", mvhd + _box(b"trak", tkhd + _box(b"mdia", mdhd + hdlr + minf)))
    return _box(b"ftyp", b"M4A " + struct.pack(">I", 0) + b"M4A mp42isom") + moov + _box(b"mdat", bytes(64))


def test_m4a_with_tags():
    buffer = io.BytesIO(_m4a())
    tagged = MP4(buffer)
    tagged.update({"\xa9ART": ["Nina Simone"], "\xa9alb": ["Pastel Blues"], "\xa9nam": ["Sinnerman"],
                   "\xa9day": ["1965-10-01"], "\xa9gen": ["Jazz"], "\xa9cmt": ["Ten minutes long"]})
    buffer.seek(0)
    tagged.save(buffer)
    data = buffer.getvalue()
    assert _mime(data) == "audio/x-m4a"
    prepared = _prepare(data)
    assert prepared.title == "Nina Simone - Sinnerman"
    assert prepared.content == "Nina Simone, Pastel Blues, Sinnerman, 1965, 1:02:05, 128kbps"
    assert prepared.metadata == "Jazz Ten minutes long"


def test_m4a_without_tags():
    prepared = _prepare(_m4a(seconds=42))
    assert (prepared.title, prepared.content, prepared.metadata) == ("", "00:42, 128kbps", "")


@pytest.mark.parametrize("data,mimetype", [
    (b"not audio at all", "audio/mpeg"),
    (b"fLaC" + bytes(40), "audio/flac"),
    (b"OggS" + bytes(40), "audio/ogg"),
    (_box(b"ftyp", b"M4A \0\0\0\0") + _box(b"moov", b"\0\0\0\x20trak"), "audio/x-m4a"),
])
def test_corrupt_audio_raises(data, mimetype):
    with pytest.raises(PreparationError) as raised:
        prepare_audio(data, "file:///bad", mimetype, {})
    assert "\n" not in str(raised.value)
