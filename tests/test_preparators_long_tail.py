"""The long tail of formats Tika reads (issue 24, item 4), each on a file nobody here made: Apache Tika's
own test documents (its modules' test jars on Maven Central). 7z, cpio and ar archives; lz4 frames and
zlib streams, framed Snappy and Unix compress (``.Z``); ZIP entries imploded (7-Zip); RAR (bsdtar); WARC and ARC web archives; dBASE tables; Apple binary property lists and Safari
webarchives; compiled Java classes; compiled HTML help (CHM); iWork '05-'09 Pages, Numbers and Keynote; Outlook's
TNEF (winmail.dat); FrameMaker MIF; Hangul (HWP 5, distribution documents decrypted); and what only Tika read
before (drawn text, links, Publisher, Visio, MATLAB; see test_preparators_drawn_text.py). Through the MIME decision and the preparators, then a real crawl
whose text ``beamtrawl search`` finds."""

from __future__ import annotations

import io
import struct
import time
import zipfile

import pytest
from beamtrawl.transforms.preparators import publisher

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes

# (Tika module, file, the type it is given, a phrase its text holds)
FILES = [
    ("pkg", "test-documents.7z", "application/x-7z-compressed", "Sample Excel Worksheet - Numbers and their Squares"),
    ("pkg", "test-documents.cpio", "application/x-cpio", "Sample Excel Worksheet - Numbers and their Squares"),
    ("pkg", "testARofText.ar", "application/x-archive", "Test d'indexation de Txt"),
    ("pkg", "testLZ4-framed.lz4", "application/x-lz4", "qwertyuiop"),
    ("pkg", "testTXT.zlib", "application/zlib", "Test d'indexation de Txt"),
    ("pkg", "testTXT.zlib0", "application/zlib", "Test d'indexation de Txt"),
    ("pkg", "testSnappy-framed.sz", "application/x-snappy-framed", "Lorem ipsum dolor sit amet, consectetur"),
    ("pkg", "test-documents.rar", "application/x-rar", "Sample Excel Worksheet - Numbers and their Squares"),
    ("pkg", "moby.zip", "application/zip", "Call me Ishmael. Some years ago--never mind how long precisely"),
    ("pkg", "test-documents.tar.Z", "application/x-tarz", "Sample Excel Worksheet - Numbers and their Squares"),
    ("webarchive", "testWARC_multiple.warc", "application/warc", "1850 Slave Schedules to the 1850 Census"),
    ("webarchive", "testWARC_multiple.warc.gz", "application/warc", "1850 Slave Schedules to the 1850 Census"),
    ("webarchive", "cc.warc.gz", "application/warc", "open repository of web crawl data"),
    ("webarchive", "example.arc.gz", "application/x-ia-arc", "illustrative examples in documents"),
    ("webarchive", "testARC.arc", "application/x-ia-arc", "Apache/1.3.28 Server at www.uq.edu.au"),
    ("miscoffice", "testDBF.dbf", "application/x-dbf", "of march hath perced"),
    ("miscoffice", "testDBF_gb18030.dbf", "application/x-dbf", "虽然该指令经过重新发布"),
    ("apple", "testBPList.bplist", "application/x-bplist", "Music Folder: file://localhost/Users/nrajlich/Music"),
    ("apple", "testWEBARCHIVE.webarchive", "application/x-webarchive", "detects and extracts metadata and structured text"),
    ("code", "AutoDetectParser.class", "application/x-java-applet", "public class org.apache.tika.parser.AutoDetectParser"),
    ("code", "AppleSingleFileParser.class", "application/x-java-applet", "private short readThroughNumEntries"),
    ("microsoft", "testChm.chm", "application/vnd.ms-htmlhelp",
     "The HTML Help ActiveX control reference provides information about how to use the control"),
    ("microsoft", "chm/gpedit.CHM", "application/vnd.ms-htmlhelp",
     "composant logiciel enfichable MMC (Microsoft Management Console)"),
    ("apple", "testPages.pages", "application/vnd.apple.pages", "Both Pages 1.x and Keynote 2.x, which form the basis"),
    ("apple", "testNumbers.numbers", "application/vnd.apple.numbers", "Fill up SUV for camping trip"),
    ("apple", "testKeynote.key", "application/vnd.apple.keynote", "Some random text for the sake of testability."),
    ("microsoft", "testWINMAIL.dat", "application/vnd.ms-tnef", "Le renard brun rapide saute par-dessus le chien"),
    ("miscoffice", "testFramemakerMif.mif", "application/vnd.mif", "Ut consequat semper viverra nam libero justo."),
    ("miscoffice", "testHWP-v5b.hwp", "application/x-hwp", "파서 및 감지기 페이지 티카와 작동 방법의 주요 인터페이스를 설명합니다."),
    ("miscoffice", "testHWP-v5-dist.hwp", "application/x-hwp", "파서 및 감지기 페이지 티카와 작동 방법의 주요 인터페이스를 설명합니다."),
    # What only Tika read before: drawn text (metafiles, their pictures in Office files), links, Publisher, Visio,
    # MATLAB, XLS text boxes and charts, PPT comments, PDF annotations (tests/test_preparators_drawn_text.py)
    ("code", "breidamerkurjokull_radar_profiles_2009.mat", "application/x-matlab-data", "waveform: [1024x1261 double array]"),
    ("microsoft", "testEMF_iconOnlyLongFilename.emf", "image/emf", "a very long name that should be wrapped.docx"),
    ("microsoft", "testEMF_zero_coords.emf", "image/emf", "we help organizations virtually manage agile workflows"),
    ("microsoft", "Doc1_ole.doc", "application/msword", "MSj00974840000[1].wav"),
    ("microsoft", "testDocumentLink.doc", "application/msword", "list the packages available for reporting"),
    ("microsoft", "testRTFEmbeddedLink.rtf", "application/rtf", "This is a sample Microsoft Word Document."),
    ("microsoft", "testRTFRegularImages.rtf", "application/rtf", "rtf_attachments\\testJPEG_EXIF_普林斯顿.jpg"),
    ("microsoft", "testInstrLink.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "Invoice document shared with your Gmail Workspace."),
    ("microsoft", "testEXCEL_textbox.xls", "application/vnd.ms-excel", "this is some autoshape text"),
    ("microsoft", "testMSChart-govdocs-428996.xls", "application/vnd.ms-excel", "2002 2003 2004 2005 Tech Partners"),
    ("microsoft", "testMSChart-govdocs-428996.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
     "2002 2003 2004 2005 Tech Partners"),
    ("microsoft", "testEXCEL_embeddedPDF_mac.xls", "application/vnd.ms-excel",
     "Apache Tika is a toolkit for detecting and extracting metadata"),
    ("microsoft", "testEXCEL_embeddedPDF_mac.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
     "Apache Tika is a toolkit for detecting and extracting metadata"),
    ("microsoft", "testPPT_comment.ppt", "application/vnd.ms-powerpoint",
     "Allison, Timothy B. (ATB) - I'm afraid I'm going to have to ask you to add some content"),
    ("microsoft", "testPUBLISHER.pub", "application/x-mspublisher", "0123456789abcdef0123456789abcdef0123456789abcdef"),
    ("microsoft", "testVISIO.vsd", "application/vnd.visio", "Some random text, on a page"),
    ("pdf", "testPopupAnnotation.pdf", "application/pdf", "igalsh Sticky Note this is the note"),
    # Word documents saved as one XML file: flat OPC (its parts, the embedded presentation's slide too) and Word
    # 2003 XML (its objects' previews name the files inserted)
    ("microsoft", "testWORD_2006ml.xml", "application/vnd.ms-word2006ml", "Sample Powerpoint Slide"),
    ("microsoft", "testWORD_2003ml.xml", "application/vnd.ms-wordml", "testPPT.ppt"),
    ("miscoffice", "testQUATTRO.qpw", "application/x-quattro-pro", "This is an example spreadsheet made with Quattro Pro X3."),
    # XPS and OpenXPS printouts (glyph runs: a word's letters and the spaces each a run of their own) and Visio's XML
    # drawings, templates and stencils: all were ZIPs, their part names indexed
    ("microsoft", "test_text.xps", "application/vnd.ms-xpsdocument", "Parts of this are in italics and bold."),
    ("microsoft", "testPPT.xps", "application/vnd.ms-xpsdocument", "every other file being tested for tika content"),
    ("microsoft", "testXPSWithDataDescriptor2.xps", "application/oxps", "How was I supposed to know"),
    ("microsoft", "testVISIO.vsdx", "application/vnd.ms-visio.drawing", "This is a test. Nothing fancy."),
    ("microsoft", "testVISIO.vstx", "application/vnd.ms-visio.template", "This is a test. Nothing fancy."),
    ("microsoft", "testVISIO.vssm", "application/vnd.ms-visio.stencil.macroenabled.12", "This is a test. Nothing fancy."),
    # text Tika read and beamtrawl lost: a heading's run in a content control, a PDF form's filled-in value
    ("microsoft", "testWORD_missing_text.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "Experience BigCompany"),
    ("pdf", "testPDF_acroform3.pdf", "application/pdf", "aTextField: TIKA-1226"),
    # MS Graph charts in presentations: their datasheets, a row a line (xlrd reads no worksheet in them)
    ("microsoft", "testPPT_embedded2.ppt", "application/vnd.ms-powerpoint", "East 20.4 27.4 90 20.4"),
    ("microsoft", "testMSChart-govdocs-428996.ppt", "application/vnd.ms-powerpoint", "Tech Partners 4175 3406 3500 2470"),
    # a DOCX holding a ZIP holding a ZIP holding a ZIP of text: four levels (chain.MAX_NESTING)
    ("microsoft", "test_recursive_embedded.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "When in the Course of human events"),
]


def prepare(module: str, name: str):
    data = tika_test_document(module, name)
    return prepare_bytes(data, f"file:///tail/{name.rsplit('/', 1)[-1]}")


@pytest.mark.parametrize("module, name, mimetype, phrase", FILES, ids=[f[1] for f in FILES])
def test_long_tail_file_is_typed_and_read(module, name, mimetype, phrase):
    prepared, errors, typed = prepare(module, name)
    assert (errors, typed) == ([], mimetype)
    assert prepared is not None and not prepared.partial
    assert phrase in " ".join(prepared.content.split())


def test_archive_members_are_prepared_by_their_own_type():
    """The 7z's and the cpio's Word, Excel, PDF, ODF and RTF files are read, not only named."""
    for name in ("test-documents.7z", "test-documents.cpio"):
        prepared, _errors, _ = prepare("pkg", name)
        assert prepared.fields == {"entries": "9", "truncated": "false"}
        for member in ("testWORD.doc", "testPDF.pdf", "testOpenOffice2.odt", "testRTF.rtf"):
            assert f"test-documents/{member}:\n" in prepared.content, (name, member)


def test_archive_bounds_hold_for_7z_and_cpio():
    """max_bytes keeps what fits and says it was reached, as for a ZIP."""
    from beamtrawl.transforms.preparators import archive

    for name in ("test-documents.7z", "test-documents.cpio"):
        prepared = archive.prepare_archive(tika_test_document("pkg", name), f"file:///{name}", "", {"max_bytes": 20000})
        assert prepared.fields["truncated"] == "true" and "max_bytes (20000)" in prepared.partial
        assert "test-documents/testXML.xml" in prepared.content  # every name is still listed


def test_unix_compress_decodes_as_gzip_does_and_refuses_what_compress_cannot_write():
    """The LZW decoder against gzip's (which reads .Z) on a real file; Tika's 30-bit-code file is one failure."""
    import io
    import subprocess

    from beamtrawl.transforms.preparators import compressed

    data = tika_test_document("pkg", "test-documents.tar.Z")
    ours = compressed.COMPRESS.reader(io.BytesIO(data)).read()
    assert ours == subprocess.run(["gzip", "-dc"], input=data, capture_output=True, check=True).stdout
    prepared, errors, mimetype = prepare("pkg", "testZ_oom.Z")
    assert (prepared, mimetype) == (None, "application/x-compress")
    assert errors == ["archive: not a readable compress file: a .Z file of 30-bit codes"]


def test_imploded_zip_entries_without_7zip_are_names_and_a_report_line(monkeypatch, tmp_path):
    from tests.test_helper_programs import _path_without

    monkeypatch.setenv("PATH", _path_without("7z", tmp_path / "bin"))
    prepared, errors, _mimetype = prepare("pkg", "moby.zip")
    assert errors == [] and "moby.134" in prepared.content and "Call me Ishmael" not in prepared.content
    assert prepared.partial == ("entries in a legacy ZIP method not read: 7z is not installed "
                                "(Debian package p7zip-full)")


def test_rar_without_bsdtar_or_with_encrypted_headers_is_one_clear_failure(monkeypatch, tmp_path):
    from tests.test_helper_programs import _path_without

    prepared, errors, _mimetype = prepare("pkg", "test-documents-enc.rar")
    assert prepared is None and errors == [("archive: not a readable RAR archive: bsdtar: RAR encryption support "
                                            "unavailable.")]
    monkeypatch.setenv("PATH", _path_without("bsdtar", tmp_path / "bin"))
    prepared, errors, _mimetype = prepare("pkg", "test-documents.rar")
    assert prepared is None and errors == ["archive: bsdtar is not installed (Debian package libarchive-tools)"]


def test_warc_records_are_headlines_and_each_is_read_by_its_type():
    prepared, _errors, _ = prepare("webarchive", "testWARC_multiple.warc.gz")
    assert prepared.headlines == ["https://russellvets.org/",
                                  "https://russellvets.org/images/signatures/kendrick_joseph_b.jpg"]
    assert prepared.fields["records"] == "2" and "<html" not in prepared.content.lower()


def test_webarchive_title_is_its_page_and_its_subresources_are_named():
    prepared, _errors, _ = prepare("apple", "testWEBARCHIVE.webarchive")
    assert prepared.title == "Apache Tika - Apache Tika" and prepared.fields["page_url"] == "http://tika.apache.org/"
    assert ".png" in prepared.content


def test_property_list_is_an_outline_with_iso_dates():
    """Each key once, its members indented under it (a search for a track's artist and album finds both on
    the lines they share); dates as XML property lists write them; data and empty values give their key only."""
    from beamtrawl.transforms.preparators.plist import lines

    prepared, _errors, _ = prepare("apple", "testBPList.bplist")
    assert "\nPlaylists\n  All Items: True\n  Master: True\n  Name: Library\n" in prepared.content
    assert ("\nTracks\n  100\n    Album: Axis: Bold As Love\n    Album Artist: Jimi Hendrix\n" in prepared.content
            and "    Date Added: 2010-02-06T03:05:30Z\n" in prepared.content)
    assert "Playlists.Playlist Items" not in prepared.content
    assert lines({"a": [{"b": b"data", "c": None}, []], "": "x"}) == ["a", "  b", "x"]


def test_java_class_outline_names_class_and_members():
    prepared, _errors, _ = prepare("code", "AutoDetectParser.class")
    assert prepared.title == "org.apache.tika.parser.AutoDetectParser"
    assert prepared.fields == {"java_package": "org.apache.tika.parser", "source_file": "AutoDetectParser.java"}
    assert "extends org.apache.tika.parser.CompositeParser" in prepared.content
    assert "public AutoDetectParser();" in prepared.content


def test_java_class_constants_have_their_values():
    """Constant fields' ConstantValue attributes: a search for 15 or a string a class defines finds it."""
    prepared, _errors, _ = prepare("code", "AppleSingleFileParser.class")
    assert "    private static final int DIRECTORY_ID = 15;" in prepared.content.splitlines()


def test_help_file_contents_are_headlines_in_their_code_page():
    prepared, _errors, _ = prepare("microsoft", "chm/gpedit.CHM")  # a French help file, its contents in cp1252
    assert prepared.headlines[0] == "Éditeur d’objets de stratégie de groupe"
    assert prepared.fields["pages"] == "20"


def test_help_file_without_its_helper_program_names_the_package(monkeypatch):
    from beamtrawl.transforms.preparators import chm

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(chm.PreparationError, match=r"extract_chmLib is not installed \(Debian package libchm-bin\)"):
        chm.prepare_chm(tika_test_document("microsoft", "testChm.chm"), "file:///a.chm", "", {})


def test_word_xml_files_base64_is_no_text():
    """Word 2003 XML keeps pictures and OLE objects as base64 (``w:binData``): no longer indexed as words."""
    prepared, errors, _ = prepare("microsoft", "testWORD_2003ml.xml")
    assert errors == [] and "0M8R4KGx" not in prepared.content  # oledata.mso, a compound file
    assert "This should point to an endnote" in prepared.content and prepared.fields["embedded"] == "10"


def test_word_2003_xml_paragraphs_are_lines_and_its_ole_objects_are_read():
    """A word Word split into runs (``j`` ``um`` ``ped``) is one word; deletions and field codes are not text;
    the objects in ``oledata.mso`` (a chart's workbook, a PDF, a presentation) are read by their own type."""
    prepared, errors, _ = prepare("microsoft", "testWORD_2003ml.xml")
    lines = prepared.content.split("\n")
    assert errors == [] and "The quick brown fox jumped over the lazy brown dog." in lines
    assert "Heading1" in lines and "PAGEREF" not in prepared.content and "Deleted paragraph1" not in prepared.content
    assert "embedded: oledata.mso/_1541934437\nApache Tika - Apache Tika" in prepared.content  # the PDF
    assert "Sample Powerpoint Slide" in lines and "This is the chart title" in lines


def test_word_tracked_insertions_are_text():
    """python-docx's paragraph text leaves out tracked insertions: "over the lazy brown dog" lost "dog"."""
    prepared, errors, _ = prepare("microsoft", "testWORD_2006ml.xml")
    assert errors == [] and "The quick brown fox jumped over the lazy brown dog." in prepared.content


def test_damaged_long_tail_files_are_one_failure_each():
    """Cut in half, each is a report line or what was read before the damage, never an exception."""
    for module, name, _mimetype, _phrase in FILES:
        data = tika_test_document(module, name)
        url = f"file:///tail/{name.rsplit('/', 1)[-1]}"
        half = data[: len(data) // 2]
        prepared, errors, _ = prepare_bytes(half, url)
        assert prepared is not None or errors, name


@pytest.mark.parametrize("target", ["embedded", "opensearch"])
def test_crawl_finds_the_long_tail_by_search(tmp_path, make_config, request, crawl, search, target):
    """Each file's known phrase is found by ``beamtrawl search``, in the embedded index and on OpenSearch
    (the session's node)."""
    root = tmp_path / "tail"
    root.mkdir()
    for module, name, _mimetype, _phrase in FILES:
        (root / name.rsplit("/", 1)[-1]).write_bytes(tika_test_document(module, name))
    config = make_config(root) if target == "embedded" else request.getfixturevalue("os_config")(root)
    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))
    for _module, name, _mimetype, phrase in FILES:
        hits = [hit["url"].rsplit("/", 1)[1] for hit in search(config, f'"{phrase}"')]
        assert name.rsplit("/", 1)[-1] in hits, (name, phrase, hits)


def _seven_zip(path, members: dict[str, bytes]) -> None:
    import py7zr

    with py7zr.SevenZipFile(path, "w") as archive:
        for name, body in members.items():
            archive.writestr(body, name)


def _ar(path, members: dict[str, bytes], work) -> None:
    import subprocess

    path.unlink(missing_ok=True)
    for name, body in members.items():
        (work / name).write_bytes(body)
    subprocess.run(["ar", "rc", str(path), *members], cwd=work, check=True)


@pytest.mark.parametrize("kind", ["7z", "ar"])
def test_member_added_changed_and_removed_between_crawls(tmp_path, make_config, crawl, search, kind):
    """The container's text follows its members: a new member is found, a removed one is no more."""
    code = {name: tika_test_document("code", name) for name in ("testC.c", "testJAVA.java", "testGROOVY.groovy")}
    root, work = tmp_path / "tree", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    archive = root / f"members.{kind}"

    def write(members):
        _seven_zip(archive, members) if kind == "7z" else _ar(archive, members, work)

    def found(query: str) -> list[str]:
        return [hit["url"].rsplit("/", 1)[1] for hit in search(config, query)]

    write({"testC.c": code["testC.c"], "testJAVA.java": code["testJAVA.java"]})
    config = make_config(root)
    assert crawl(config).code == 0
    assert found('"everyone\'s first program"') == [archive.name] and found('"Apache Tika"') == [archive.name]
    changed = code["testC.c"].replace(b"Apache Tika!", b"Apache Beam!")
    write({"testC.c": changed, "testGROOVY.groovy": code["testGROOVY.groovy"]})
    assert crawl(config).code == 0
    assert found('"everyone\'s first program"') == [] and found('"Apache Tika"') == []
    assert found('"commenting out an alternative"') == [archive.name] and found('"Apache Beam"') == [archive.name]


def test_iwork_cells_metadata_and_notes_are_text():
    """Numbers keeps cell values in attributes (text, numbers, formulas' results); Keynote's notes are text."""
    numbers, _errors, _ = prepare("apple", "testNumbers.numbers")
    assert "Account Categories" in numbers.content and "-872.39999999999998" in numbers.content  # a table, a formula
    keynote, _errors, _ = prepare("apple", "testKeynote.key")
    assert "A nice note" in keynote.content and "A sample presentation" in keynote.content


def test_tnef_attachments_are_prepared_by_their_type():
    """winmail.dat's Word, PDF, HTML and XML attachments are read, its subject is the title."""
    prepared, _errors, _ = prepare("microsoft", "testWINMAIL.dat")
    assert prepared.title == "This is a test message"
    for name in ("quick.doc", "quick.pdf", "quick.html", "quick.xml"):
        assert f"attachment: {name}\nThe quick brown fox jumps over the lazy dog" in prepared.content, name


def test_binary_framemaker_file_stays_unsupported():
    """testMIF.mif is a binary <MakerFile>: nothing reads it (Tika neither), and it is no failure."""
    prepared, errors, typed = prepare("miscoffice", "testMIF.mif")
    assert typed != "application/vnd.mif" and errors == [] and len(prepared.content.strip()) < 50


@pytest.mark.parametrize("name", ["testHWP-v5b.hwp", "testHWP-v5-dist.hwp"])
def test_hwp_title_and_authors_come_from_its_own_summary(name):
    """HWP keeps them in HwpSummaryInformation, which olefile's metadata reader does not look at."""
    prepared, errors, _ = prepare("miscoffice", name)
    assert prepared.title == "Apache Tika" and "SooMyung Lee" in prepared.metadata, errors
    assert "HWP 텍스트 추출기" in prepared.metadata and "\x00" not in prepared.metadata


def test_publisher_chunks_that_all_name_the_whole_stream_give_its_text_once():
    """20 TEXT entries with offset 0 and a length of 4 GB each decoded the whole stream: 20 copies of it."""
    entries = b"".join(struct.pack("<H4s10sII", 0x18, b"TEXT", bytes(10), 0, 0xFFFFFFFF) for _ in range(20))
    contents = (b"CHNKINK ".ljust(0x20, b"\0") + entries).ljust(0x200, b"\0") + "words".encode("utf-16-le")
    text = publisher.story_text(contents)
    assert len(text) == len(contents) // 2 and text.endswith("words") and text.count("words") == 1


def _repacked(name: str, change: dict[str, bytes | None]) -> bytes:
    """Tika's file ``name`` with members replaced (None: removed) or added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", name))) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in change:
                target.writestr(info.filename, source.read(info))
        for member, body in change.items():
            if body is not None:
                target.writestr(member, body)
    return out.getvalue()


def test_hostile_xps_and_visio_packages_cost_a_page_or_are_one_failure():
    """A page that is an entity bomb or over the part bound (65 MiB of spaces, 64 KB packed) costs that page, said
    in the report line; a sequence that names no part, or a Visio package without its pages' relationships, is
    one clear failure."""
    page = "Documents/1/Pages/1.fpage"
    bomb = b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><FixedPage>&b;</FixedPage>'
    for body, why in ((bomb, "DTDForbidden"), (b" " * (65 * 1024**2), "over 64 MiB")):
        prepared, errors, typed = prepare_bytes(_repacked("test_text.xps", {page: body}), "file:///h/p.xps")
        assert typed == "application/vnd.ms-xpsdocument" and errors == [] and prepared.content == ""
        assert prepared.partial.startswith(f"1 of 1 pages unreadable (/{page}:") and why in prepared.partial
    prepared, errors, _ = prepare_bytes(_repacked("test_text.xps", {"FixedDocSeq.fdseq": None}), "file:///h/s.xps")
    assert prepared is None and "not readable as XPS: KeyError" in errors[0]
    prepared, errors, typed = prepare_bytes(_repacked("testVISIO.vsdx", {"visio/pages/_rels/pages.xml.rels": None}),
                                            "file:///h/d.vsdx")
    assert typed == "application/vnd.ms-visio.drawing" and prepared is None
    assert "not readable as a Visio drawing: KeyError" in errors[0]


def test_xps_right_to_left_runs_and_link_targets():
    """Arabic runs (right to left: each run's origin is its right edge) keep their words; a hyperlink's target is in
    the furniture field, searched and never shown."""
    prepared, errors, _ = prepare("microsoft", "testXPS_various.xps")
    assert errors == [] and prepared.content.split("\n")[:3] == ["لثعلب البني السريع", "The البني fox", "لثعلب brown السريع"]
    assert prepared.furniture == "http://tika.apache.org/"


def _tika_page(name: str = "test_text.xps", page: str = "Documents/1/Pages/1.fpage") -> str:
    return zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", name))).read(page).decode("utf-16")


def test_xps_glyph_run_with_a_hostile_bidi_level_is_read():
    """A run's BidiLevel of "1e999" (int() of infinity: OverflowError) lost the whole document, "nan" its page."""
    for level in ("1e999", "nan", "-inf"):
        page = _tika_page().replace('BidiLevel="0"', f'BidiLevel="{level}"', 1).encode("utf-16")
        prepared, errors, _ = prepare_bytes(_repacked("test_text.xps", {"Documents/1/Pages/1.fpage": page}),
                                            "file:///h/b.xps")
        assert errors == [] and prepared.partial == "" and "Parts of this are in italics" in prepared.content


def test_xps_part_named_many_times_is_read_once_and_pages_within_a_budget():
    """A 2 KB package whose sequence names one document 3,000 times, which names its page 3,000 times, took 47 s
    and 800 MB (9 million pages listed, the document parsed 3,000 times); a page named 200 times was parsed 200
    times. Distinct pages are read within 64 MiB of page XML in all, said in the report line."""
    document = "Documents/1/FixedDoc.fdoc"
    sequence = ('<FixedDocumentSequence xmlns="http://schemas.microsoft.com/xps/2005/06">'
                + f'<DocumentReference Source="/{document}"/>' * 3000 + "</FixedDocumentSequence>")
    listing = ('<FixedDocument xmlns="http://schemas.microsoft.com/xps/2005/06">'
               + '<PageContent Source="Pages/1.fpage"/>' * 3000 + "</FixedDocument>")
    started = time.monotonic()
    prepared, errors, _ = prepare_bytes(_repacked("test_text.xps", {"FixedDocSeq.fdseq": sequence, document: listing}),
                                        "file:///h/m.xps")
    assert time.monotonic() - started < 5 and errors == [] and prepared.partial == ""
    assert prepared.content.count("Parts of this are in italics and bold.") == 1
    filler = " " * (3 * 1024**2)
    pages = {f"Documents/1/Pages/{n}.fpage": _tika_page().replace("</FixedPage>", f"{filler}</FixedPage>")
             for n in range(2, 40)}
    listing = ('<FixedDocument xmlns="http://schemas.microsoft.com/xps/2005/06">'
               + "".join(f'<PageContent Source="{page.rsplit("/", 2)[1]}/{page.rsplit("/", 1)[1]}"/>' for page in pages)
               + "</FixedDocument>")
    prepared, errors, _ = prepare_bytes(_repacked("test_text.xps", {**pages, document: listing}), "file:///h/b.xps")
    assert errors == [] and prepared.partial == "read the first 21 pages (64 MiB of pages)"
    assert prepared.content.count("Parts of this are in italics and bold.") == 21


def test_visio_page_listed_many_times_is_read_once_and_an_absolute_target_is_followed():
    """A drawing whose pages.xml lists its one page 3,000 times parsed that page 3,000 times (2,000: 3 s; no bound
    on pages at all); a relationship's absolute target (``/visio/pages/page1.xml``, which OPC allows) lost the page."""
    source = zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "testVISIO.vsdx")))
    pages = source.read("visio/pages/pages.xml").decode()
    page = pages[pages.index("<Page "):pages.index("</Page>") + len("</Page>")]
    started = time.monotonic()
    prepared, errors, _ = prepare_bytes(_repacked("testVISIO.vsdx", {"visio/pages/pages.xml": pages.replace(
        page, page * 3000)}), "file:///h/m.vsdx")
    assert time.monotonic() - started < 2 and errors == [] and prepared.partial == ""
    assert prepared.content == "test\nThis is a test.\nNothing fancy." and prepared.headlines == ["Page-1"]
    relationships = source.read("visio/pages/_rels/pages.xml.rels").decode()
    absolute = relationships.replace('Target="page1.xml"', 'Target="/visio/pages/page1.xml"')
    prepared, errors, _ = prepare_bytes(_repacked("testVISIO.vsdx", {"visio/pages/_rels/pages.xml.rels": absolute}),
                                        "file:///h/a.vsdx")
    assert errors == [] and prepared.partial == "" and "This is a test." in prepared.content


def test_zip_with_a_visio_part_name_but_no_visio_content_type_is_read_as_a_zip():
    """A ZIP holding ``[Content_Types].xml`` and ``visio/document.xml`` that declares no Visio part was typed a
    drawing and read empty, its text file lost without a word; a drawing without pages or masters is one failure."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("visio/document.xml", "garbage<<")
        archive.writestr("notes.txt", "important words here")
    prepared, errors, typed = prepare_bytes(out.getvalue(), "file:///h/n.zip")
    assert typed == "application/zip" and errors == [] and "important words here" in prepared.content
    bare = _repacked("testVISIO.vsdx", {"visio/pages/pages.xml": None, "visio/masters/masters.xml": None})
    prepared, errors, typed = prepare_bytes(bare, "file:///h/b.vsdx")
    assert typed == "application/vnd.ms-visio.drawing" and prepared is None
    assert errors == ["vsdx: not a Visio drawing: no pages or masters"]


def test_xps_documents_page_lists_count_in_the_budget():
    """A sequence naming many documents, each page list a part as large as a page (30 MB here), read every one of
    them whatever their size; they count in the 64 MiB now, and the pages they listed are read."""
    document = ('<FixedDocument xmlns="http://schemas.microsoft.com/xps/2005/06">' + " " * (30 * 1024**2)
                + '<PageContent Source="/Documents/1/Pages/1.fpage"/></FixedDocument>')
    sequence = ('<FixedDocumentSequence xmlns="http://schemas.microsoft.com/xps/2005/06">'
                + "".join(f'<DocumentReference Source="/d{n}.fdoc"/>' for n in range(4)) + "</FixedDocumentSequence>")
    change = {"FixedDocSeq.fdseq": sequence, **{f"d{n}.fdoc": document for n in range(4)}}
    prepared, errors, _ = prepare_bytes(_repacked("test_text.xps", change), "file:///h/d.xps")
    assert errors == [] and prepared.partial == "read the first 2 documents (64 MiB of pages)"
    assert "Parts of this are in italics and bold." in prepared.content


def test_xps_run_with_huge_indices_measures_only_its_own_glyphs():
    """A two-letter run whose ``Indices`` held 50 MB of ";" was split into 50 million entries (400 MB) to measure
    two glyphs."""
    import tracemalloc
    from xml.etree.ElementTree import Element

    from beamtrawl.transforms.preparators import xps

    page = Element("FixedPage")
    page.append(Element("Glyphs", OriginX="1", OriginY="1", UnicodeString="ab", Indices=";" * (20 * 1024**2)))
    page.append(Element("Glyphs", OriginX="50", OriginY="1", UnicodeString="cd"))
    tracemalloc.start()
    try:
        assert xps.page_text(page) == "ab cd"
        assert tracemalloc.get_traced_memory()[1] < 32 * 1024**2  # one copy of the 20 MiB attribute at most
    finally:
        tracemalloc.stop()
