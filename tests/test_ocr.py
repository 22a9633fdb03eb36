"""Text in pictures (issue 25): images and PDF pages without a text layer OCR'd by tesseract, photos found by
what they say about themselves, the bounds, the cache, and a machine without tesseract.

The scans are real pages: Debian's Bash reference manual and shared-mime-info specification (bash-doc,
shared-mime-info) rendered by PDFium as a scanner would image them, then wrapped as images or as PDFs with
no text layer; the photo is Apache Tika's geotagged JPEG test document."""

from __future__ import annotations

import io
import os
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.transforms.preparators.image import prepare_image
from beamtrawl.transforms.preparators.ocr import TESSERACT
from beamtrawl.transforms.preparators.pdf import prepare_pdf
from beamtrawl.transforms.values import OcrSettings

from tests.package_files import debian_file, tika_test_document
from tests.test_helper_programs import _path_without

BASHREF = ("bash-doc", "usr/share/doc/bash/bashref.pdf")
MIME_SPEC = ("shared-mime-info", "usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")
SCAN_DPI = 200  # the scans' resolution; OCR renders scanned PDF pages at this too (ocr.dpi), to stay quick


def _scan(package_path: tuple[str, str], page: int):
    """A page of a real PDF as a grey scan (a Pillow image)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(str(debian_file(*package_path)))
    try:
        return document[page].render(scale=SCAN_DPI / 72, grayscale=True).to_pil()
    finally:
        document.close()


def _saved(images, kind: str) -> bytes:
    out = io.BytesIO()
    images[0].save(out, kind, save_all=len(images) > 1, append_images=images[1:], resolution=SCAN_DPI)
    return out.getvalue()


def _real_pages(package_path: tuple[str, str], *numbers: int) -> bytes:
    """Pages of a real PDF, with their text layer, as a PDF of their own."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for number in numbers:
        writer.add_page(PdfReader(str(debian_file(*package_path))).pages[number])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _joined(*pdfs: bytes) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for pdf in pdfs:
        for page in PdfReader(io.BytesIO(pdf)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def scans() -> dict[str, bytes]:
    """title page (PNG), two manual pages (TIFF), a scanned PDF and a mixed one, and the photo."""
    title, introduction, installing = (_scan(BASHREF, n) for n in (0, 7, 171))
    scanned_pdf = _saved([installing], "PDF")
    return {
        "title.png": _saved([title], "PNG"),
        "manual.tif": _saved([title, introduction], "TIFF"),
        "installing.pdf": scanned_pdf,
        "mixed.pdf": _joined(_real_pages(BASHREF, 7), _saved([_scan(MIME_SPEC, 16)], "PDF")),
        "photo.jpg": tika_test_document("image", "testJPEG_GEO.jpg"),
    }


def _params(tmp_path: Path | None = None, **changes) -> dict:
    cache = str(tmp_path / "ocr-cache") if tmp_path is not None else ""
    return {"ocr": OcrSettings(**{"dpi": SCAN_DPI, "cache": cache, **changes})}


@pytest.fixture
def no_tesseract(tmp_path, monkeypatch) -> Path:
    """This test's processes find no tesseract until it is linked into the returned folder."""
    assert TESSERACT.installed(), "tesseract is missing: tests/run.sh installs tesseract-ocr"
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", _path_without("tesseract", folder))
    return folder


# ---- the preparators on their own -------------------------------------------------------------------------

def test_an_image_is_read_by_ocr_and_every_page_of_a_tiff(scans):
    png = prepare_image(scans["title.png"], "file:///title.png", "image/png", _params())
    assert "Reference Documentation for Bash" in png.content and "Western Reserve University" in png.content
    assert png.fields == {"ocr": "true", "ocr_pages": "1"} and not png.partial
    tiff = prepare_image(scans["manual.tif"], "file:///manual.tif", "image/tiff", _params())
    assert "Western Reserve" in tiff.content and "interactive features include job control" in tiff.content
    assert tiff.fields["ocr_pages"] == "2"


def test_a_photo_gives_its_camera_date_keywords_and_position():
    photo = prepare_image(tika_test_document("image", "testJPEG_GEO.jpg"), "file:///p.jpg", "image/jpeg", _params())
    assert photo.fields["camera"] == "Canon Canon EOS 40D" and photo.fields["date_taken"] == "2009:08:11 09:09:45"
    assert photo.fields["gps"] == "12.543210,-54.123400"
    assert "moscow-birds" in photo.fields["keywords"] and "moscow-birds" in photo.metadata
    assert "ocr" not in photo.fields  # a photo of birds holds no text


def test_an_image_with_xmp_and_iptc_gives_its_description_and_keywords():
    tiff = prepare_image(tika_test_document("image", "testTIFF.tif"), "file:///t.tif", "image/tiff", _params())
    assert tiff.fields["keywords"] == "cat, garden" and tiff.fields["description"].startswith("Licensed to the Apache")


def test_icons_are_not_ocrd(tmp_path):
    icon = debian_file("libreoffice-common", "usr/share/icons/hicolor/16x16/apps/libreoffice-writer.png")
    prepared = prepare_image(icon.read_bytes(), "file:///icon.png", "image/png", _params(tmp_path))
    assert prepared.content == "" and "ocr_pages" not in prepared.fields and not (tmp_path / "ocr-cache").exists()


def test_ocr_switched_off_keeps_the_photos_fields(scans):
    off = _params(enabled=False)
    assert prepare_image(scans["title.png"], "file:///t.png", "image/png", off).content == ""
    assert prepare_image(scans["photo.jpg"], "file:///p.jpg", "image/jpeg", off).fields["camera"]


def test_a_pdf_with_a_text_layer_is_never_rendered(tmp_path):
    prepared = prepare_pdf(_real_pages(BASHREF, 0, 7, 171), "file:///b.pdf", "application/pdf", _params(tmp_path))
    assert "Western Reserve University" in prepared.content and "ocr_pages" not in prepared.fields
    assert not (tmp_path / "ocr-cache").exists()  # no page went to tesseract


def test_a_scanned_pdf_is_ocrd(scans):
    prepared = prepare_pdf(scans["installing.pdf"], "file:///s.pdf", "application/pdf", _params())
    assert "C Preprocessor" in prepared.content and "consequences" in prepared.content
    assert prepared.fields == {"ocr": "true", "ocr_pages": "1"} and not prepared.partial


@pytest.mark.parametrize("name", ["testRotated+10.png", "testRotated-10.png"])
def test_a_page_turned_by_ten_degrees_is_straightened_and_read(name):
    """Tika's page of text turned by 10° either way: tesseract alone reads next to nothing of it."""
    from beamtrawl.transforms.preparators.ocr import skew
    from PIL import Image

    data = tika_test_document("ocr", name)
    assert abs(skew(Image.open(io.BytesIO(data)))) == 10
    text = " ".join(prepare_image(data, f"file:///{name}", "image/png", _params()).content.split())
    assert "Attachment apartments in delightful by motionless it no." in text


def test_level_pages_are_not_turned(scans):
    from beamtrawl.transforms.preparators.ocr import skew
    from PIL import Image

    for page in (_scan(BASHREF, 7), _scan(MIME_SPEC, 16), Image.open(io.BytesIO(scans["title.png"]))):
        assert skew(page) == 0


def test_a_real_scan_is_ocrd():
    """Tika's scanned page of loan terms (a JPEG 2000 image, no text layer): a document scanned from paper."""
    prepared = prepare_pdf(tika_test_document("pdf", "testPDF_jpeg2000.pdf"), "file:///loan.pdf", "application/pdf",
                           _params())
    text = " ".join(prepared.content.split())
    assert "The Standard Bank of South Africa" in text and "continuing covering mortgage bond(s)" in text
    assert prepared.fields == {"ocr": "true", "ocr_pages": "1"}


def test_a_mixed_pdf_gets_both_in_page_order(scans):
    prepared = prepare_pdf(scans["mixed.pdf"], "file:///m.pdf", "application/pdf", _params())
    text_layer, recognised = prepared.content.index("job control"), prepared.content.index("leeway")
    assert text_layer < recognised and prepared.fields["ocr_pages"] == "1"


def test_a_page_over_the_time_bound_is_skipped_and_the_rest_kept(scans):
    prepared = prepare_pdf(scans["mixed.pdf"], "file:///m.pdf", "application/pdf", _params(page_timeout=0.01))
    assert "job control" in prepared.content and "leeway" not in prepared.content
    assert prepared.partial == "page 2: OCR took longer than 0.01 s (ocr.page_timeout)"


def test_pages_over_the_pixel_and_page_bounds_are_skipped(scans):
    pixels = prepare_pdf(scans["installing.pdf"], "file:///s.pdf", "application/pdf", _params(max_pixels=1000))
    assert pixels.content == "" and pixels.partial.startswith("page 1: 1700×2200 pixels at 200 dpi, over ocr.max_pixels")
    pages = prepare_image(scans["manual.tif"], "file:///m.tif", "image/tiff", _params(max_pages=1))
    assert "Western Reserve" in pages.content and "job control" not in pages.content
    assert pages.partial == "pages 2-2 not OCR'd: over ocr.max_pages (1)"


def test_an_image_over_pillows_bomb_bound_is_indexed_by_name_not_failed():
    """A PNG header of 20000×20000 pixels (400 million) failed the document, and so the crawl's exit code."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"\0" * 20001)) + chunk(b"IEND", b""))
    prepared = prepare_image(png, "file:///h/map.png", "image/png", _params())
    assert prepared.content == "" and prepared.partial.startswith("not OCR'd: Image size (400000000 pixels)")


def test_the_cache_answers_a_second_preparation_without_tesseract(scans, tmp_path, no_tesseract):
    os.environ["PATH"] += os.pathsep + os.path.dirname(shutil.which("tesseract", path="/usr/bin"))
    first = prepare_pdf(scans["mixed.pdf"], "file:///m.pdf", "application/pdf", _params(tmp_path))
    assert len(list((tmp_path / "ocr-cache").glob("*/*.txt"))) == 1
    os.environ["PATH"] = str(no_tesseract)  # gone: only the cache can answer
    moved = prepare_pdf(scans["mixed.pdf"], "file:///elsewhere/m.pdf", "application/pdf", _params(tmp_path))
    assert moved.content == first.content and not moved.partial
    other_languages = prepare_pdf(scans["mixed.pdf"], "file:///m.pdf", "application/pdf",
                                  _params(tmp_path, languages=("eng", "deu")))
    assert other_languages.partial == "page 2: tesseract is not installed (Debian package tesseract-ocr)"


def test_the_cache_is_bounded(tmp_path):
    from beamtrawl.transforms.preparators.ocr import Cache

    cache = Cache(OcrSettings(cache=str(tmp_path), cache_entries=3))
    for n in range(6):
        cache.put(f"{n:064x}", f"page {n}")
        os.utime(tmp_path / f"{n:064x}"[:2] / f"{n:064x}.txt", (n, n))
    cache.prune()
    assert sorted(p.read_text() for p in tmp_path.glob("*/*.txt")) == ["page 3", "page 4", "page 5"]


def test_without_tesseract_the_image_keeps_its_metadata(scans, no_tesseract):
    photo = prepare_image(scans["photo.jpg"], "file:///p.jpg", "image/jpeg", _params())
    assert photo.fields["camera"] and photo.partial == "tesseract is not installed (Debian package tesseract-ocr)"


# ---- pictures inside containers ----------------------------------------------------------------------------

def _in_chain(data: bytes, name: str, settings: OcrSettings | None = None):
    """``data`` prepared as a crawl prepares it: by its type, its parts by theirs (with these OCR settings)."""
    from beamtrawl.pipeline.config.ocr import with_ocr
    from beamtrawl.transforms.preparators import BUILTIN, Chain
    from beamtrawl.transforms.preparators.mime import MimeSniffer

    sniff, url = MimeSniffer(), f"file:///box/{name}"
    prepared, errors = Chain(with_ocr(BUILTIN, settings or OcrSettings()), sniff).run(data, url, sniff(data, url))
    assert errors == [], errors
    return prepared


def _zip(members: dict[str, bytes]) -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return out.getvalue()


@pytest.mark.parametrize("name", ["testOCR.docx", "testOCR.pptx"])
def test_a_picture_in_an_office_file_is_ocrd(name):
    """Tika's OCR test documents: a line of text, and a picture whose words are in the picture only."""
    prepared = _in_chain(tika_test_document("ocr", name), name)
    assert "This is some text" in prepared.content
    assert "/media/image1.png\nHappy New Year 2003!" in prepared.content
    assert prepared.fields["ocr"] == "true" and prepared.fields["ocr_pages"] == "1"


def test_a_picture_in_an_odf_file_is_ocrd():
    """An ODT's ``Pictures/`` are parts, as an OOXML file's media are: Tika's ODT with an embedded picture,
    that picture's bytes swapped for Tika's photographed text (no package here ships an ODT holding one)."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(tika_test_document("miscoffice", "testODTEmbedded.odt"))) as odt:
        members = {info.filename: odt.read(info) for info in odt.infolist()}
    picture = next(name for name in members if name.startswith("Pictures/"))
    prepared = _in_chain(_zip({**members, picture: tika_test_document("ocr", "testOCR.jpg")}), "letter.odt")
    assert "Apache Tika\nOCR Testing" in prepared.content
    assert prepared.fields["ocr"] == "true" and prepared.fields["ocr_pages"] == "1"


def test_a_picture_in_an_archive_is_ocrd_and_its_icons_are_not():
    icon = debian_file("libreoffice-common", "usr/share/icons/hicolor/16x16/apps/libreoffice-writer.png")
    archive = _zip({"notes.txt": b"plain notes", "scan.jpg": tika_test_document("ocr", "testOCR.jpg"),
                    "icon.png": icon.read_bytes()})
    prepared = _in_chain(archive, "box.zip")
    assert "notes.txt:\nplain notes" in prepared.content and "scan.jpg:\nApache Tika\nOCR Testing" in prepared.content
    assert prepared.fields["ocr_pages"] == "1" and prepared.fields["ocr"] == "true"


def test_the_pictures_of_a_container_share_its_bounds(tmp_path, no_tesseract):
    """max_pages counts over the document and its parts; the parts' pictures may spend half the document's
    OCR time (ocr.PARTS_SHARE), and the container keeps its own text; the cache answers a re-preparation."""
    os.environ["PATH"] += os.pathsep + os.path.dirname(shutil.which("tesseract", path="/usr/bin"))
    pictures = {f"scan{n}.png": tika_test_document("ocr", name)
                for n, name in enumerate(("testOCR_spacing.png", "testOCR.jpg", "testOCR_spacing.png"))}
    archive = _zip({"notes.txt": b"plain notes", **pictures})
    settings = OcrSettings(max_pages=2, cache=str(tmp_path / "ocr-cache"))
    first = _in_chain(archive, "box.zip", settings)
    assert first.content.count("The quick brown fox") == 1 and "OCR Testing" in first.content
    assert first.fields["ocr_pages"] == "2" and "plain notes" in first.content
    assert first.partial == "pictures in its parts not OCR'd: 1 (not OCR'd: over ocr.max_pages (2))"
    # 8 s of OCR for the document leave its parts 4 s, under the 5 s a page is given at least: none is OCR'd
    spent = _in_chain(archive, "box.zip", OcrSettings(document_budget=8.0))
    assert "plain notes" in spent.content and "OCR Testing" not in spent.content and "ocr" not in spent.fields
    assert spent.partial == ("pictures in its parts not OCR'd: 3 (not OCR'd: the document's OCR time (near "
                             "preparation.timeout) is spent)")
    os.environ["PATH"] = str(no_tesseract)  # gone: only the cache can answer
    assert _in_chain(archive, "moved.zip", settings).content == first.content


def test_pictures_in_containers_are_found_by_their_words(tmp_path, make_config, crawl, search):
    """A crawl: the DOCX's picture, an archive's scan and a mail's attached screenshot, each found by words
    that are only in the picture, and marked as recognised text."""
    from email.message import EmailMessage

    root = tmp_path / "boxes"
    root.mkdir()
    (root / "testOCR.docx").write_bytes(tika_test_document("ocr", "testOCR.docx"))
    (root / "scans.zip").write_bytes(_zip({"scan.jpg": tika_test_document("ocr", "testOCR.jpg")}))
    mail = EmailMessage()
    mail["Subject"], mail["From"], mail["To"] = "the screenshot", "ann@example.org", "bob@example.org"
    mail.set_content("see the attached picture")
    mail.add_attachment(tika_test_document("ocr", "testOCR_spacing.png"), maintype="image", subtype="png",
                        filename="shot.png")
    (root / "shot.eml").write_bytes(mail.as_bytes())
    config = make_config(root)
    done = crawl(config)
    assert done.code == 0, (done.stderr, done.report.get("problems"))
    assert done.counts["ocr_pages"] == 3
    for query, name in (('"Happy New Year 2003"', "testOCR.docx"), ('"OCR Testing"', "scans.zip"),
                        ('"quick brown fox"', "shot.eml")):
        hits = search(config, query)
        assert [Path(h["url"]).name for h in hits] == [name], (query, hits)
        assert hits[0]["extra"].get("ocr") == "true"


# ---- configuration ----------------------------------------------------------------------------------------

def _config(**ocr):
    return parse_config({"start": [{"url": "/srv"}], "index": {"path": "/srv/i.sqlite"}, "ocr": ocr}, "crawl.yaml")


def test_languages_are_checked_against_the_installed_packs():
    config = _config(languages=["eng", "deu"])
    assert config.ocr.languages == ("eng", "deu") and config.ocr.cache == "/srv/i.work/ocr-cache"
    assert dict(next(p for p in config.preparators if p.name == "pdf").params)["ocr"] == config.ocr
    with pytest.raises(ConfigError) as caught:
        _config(languages=["eng", "fra"])
    assert str(caught.value).startswith("crawl.yaml: ocr.languages[1]: tesseract has no language pack 'fra' "
                                        "(install the Debian package tesseract-ocr-fra; installed: deu, eng")
    with pytest.raises(ConfigError) as caught:  # installed, listed, and it read an English page as garbage
        _config(languages=["osd"])
    assert str(caught.value).startswith("crawl.yaml: ocr.languages[0]: 'osd' is tesseract's orientation and script "
                                        "detection, not a language")



def test_a_language_pack_missing_on_the_preparing_machine_is_named(scans):
    """Checked with the configuration, absent where the page is read (a worker): tesseract said only "Failed to
    init API, possibly an invalid tessdata path"."""
    prepared = prepare_image(scans["manual.tif"], "file:///m.tif", "image/tiff", _params(languages=("xyz",)))
    assert prepared.content == "" and prepared.partial.startswith(
        "page 1: tesseract has no language pack 'xyz' here (install the Debian package tesseract-ocr-xyz)")

# ---- crawls and searches ----------------------------------------------------------------------------------

def _tree(root: Path, scans: dict[str, bytes]) -> Path:
    root.mkdir()
    for name in ("title.png", "installing.pdf", "mixed.pdf", "photo.jpg"):
        (root / name).write_bytes(scans[name])
    (root / "notes.txt").write_text("plain notes beside the scans\n")
    return root


def _found(search, config) -> dict[str, dict]:
    """The hit of each picture by its words or fields."""
    queries = {"title.png": '"Western Reserve University"', "installing.pdf": "Preprocessor consequences",
               "mixed.pdf": "leeway", "photo.jpg": "moscow-birds"}
    found = {}
    for name, query in queries.items():
        hits = search(config, query)
        assert [Path(h["url"]).name for h in hits] == [name], (query, hits)
        found[name] = hits[0]
    return found


def _check_hits(found: dict[str, dict]) -> None:
    assert all(found[name]["extra"].get("ocr") == "true" for name in ("title.png", "installing.pdf", "mixed.pdf"))
    assert found["photo.jpg"]["extra"]["camera"] == "Canon Canon EOS 40D"
    assert found["photo.jpg"]["extra"]["gps"] == "12.543210,-54.123400"


def test_pictures_are_found_by_their_words_and_fields(tmp_path, scans, make_config, crawl, search):
    config = make_config(_tree(tmp_path / "scans", scans), ocr={"languages": ["eng", "deu"], "dpi": SCAN_DPI})
    done = crawl(config)
    assert done.code == 0, done.stderr
    assert done.counts["ocr_pages"] == 4 and "4 pages or images OCR'd" in done.stdout + done.stderr  # the photo too
    found = _found(search, config)
    _check_hits(found)
    assert len(list((tmp_path / "index.work" / "ocr-cache").glob("*/*.txt"))) == 4
    _check_search_page(tmp_path, config, found)


def _check_search_page(tmp_path: Path, config: Path, found: dict[str, dict]) -> None:
    """The page says where the text came from, and shows an image hit's thumbnail behind the access check."""
    from PIL import Image

    from tests.serve_site import Site, get, served

    users = tmp_path / "users"
    users.write_text("", encoding="utf-8")
    with served(Site(tmp_path / "scans", config, users)) as base:
        status, _, page = get(f"{base}/?q=Western+Reserve+University")
        assert status == 200 and b"text recognised from a scan" in page
        assert f'src="/thumbnail/{found["title.png"]["id"]}"'.encode() in page
        status, headers, picture = get(f"{base}/thumbnail/{found['title.png']['id']}")
        assert status == 200 and headers["Content-Type"] == "image/png"
        assert max(Image.open(io.BytesIO(picture)).size) == 160
        assert get(f"{base}/thumbnail/{found['installing.pdf']['id']}")[0] == 404  # not an image
        assert get(f"{base}/thumbnail/{'0' * 32}")[0] == 404  # no such document, or not the searcher's


def test_pictures_are_found_on_opensearch(tmp_path, scans, os_config, crawl, search):
    config = os_config(_tree(tmp_path / "scans", scans), ocr={"dpi": SCAN_DPI})
    done = crawl(config)
    assert done.code == 0, done.stderr
    _check_hits(_found(search, config))


def test_without_tesseract_one_warning_then_healed_once_installed(tmp_path, scans, make_config, crawl, search,
                                                                   no_tesseract):
    config = make_config(_tree(tmp_path / "scans", scans), ocr={"dpi": SCAN_DPI})
    first = crawl(config)
    assert first.code == 0, first.stderr  # pages not OCR'd are report lines, not failures
    warning = ("tesseract is not installed (Debian package tesseract-ocr): 4 images and PDFs with scanned pages "
               "prepared without it; the first crawl after it is installed prepares them again")
    assert [w for w in first.report["warnings"] if "tesseract" in w] == [warning]
    assert f"warning: {warning}" in first.stderr + first.stdout
    assert search(config, "leeway") == [] and [Path(h["url"]).name for h in search(config, "job control")] == [
        "mixed.pdf"]
    assert search(config, "moscow-birds")[0]["extra"]["camera"]  # the photo's fields need no tesseract

    (no_tesseract / "tesseract").symlink_to(shutil.which("tesseract", path="/usr/bin"))
    healed = crawl(config)
    assert healed.code == 0 and not [w for w in healed.report["warnings"] if "tesseract" in w]
    assert healed.counts["changed"] == 5 and healed.counts["ocr_pages"] == 4
    _check_hits(_found(search, config))


def test_ocr_switched_off_needs_no_tesseract(tmp_path, scans, make_config, crawl, search, no_tesseract):
    config = make_config(_tree(tmp_path / "scans", scans), ocr={"enabled": False})
    done = crawl(config)
    assert done.code == 0 and not [w for w in done.report["warnings"] if "tesseract" in w]
    assert search(config, "moscow-birds")[0]["extra"]["camera"] and search(config, "leeway") == []


def test_a_text_layer_of_garbage_is_not_usable_but_dot_leaders_are():
    from beamtrawl.transforms.preparators.pdf import usable

    assert not usable("") and not usable("12") and not usable("\ue012\ue013\ue014 abc " * 10)
    assert usable("1 Introduction . . . . . . . . . . . . . . . . . . . . .1")


def test_the_benchmark_runs_in_its_tiny_mode():
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "bench" / "ocr_bench.py"), "--tiny"], capture_output=True,
                          text=True, timeout=1200, check=False, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "accuracy: median word recall clean" in done.stdout and "x the command (target >= 0.9)" in done.stdout
    assert "not OCR'd: text PDFs prepared with OCR on / off" in done.stdout
