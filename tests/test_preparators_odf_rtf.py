"""OpenDocument and RTF preparators on real files: ODF packages written here by hand (the mimetype
member first and stored, a manifest, content.xml and meta.xml) and the ones LibreOffice ships in the
Debian package libreoffice-common (fetched once, see ``package_files``); RTF as text."""

from __future__ import annotations

import io
import zipfile

import magic
import pytest
from beamtrawl.transforms.preparators import BUILTIN, Chain, PreparationError, odf, rtf
from beamtrawl.transforms.preparators.mime import MimeSniffer
from beamtrawl.transforms.preparators.odf import prepare_odf
from beamtrawl.transforms.preparators.rtf import prepare_rtf

from tests.package_files import debian_file, tika_test_document


def _mime(data: bytes) -> str:
    return magic.from_buffer(data, mime=True)


# -- OpenDocument ----------------------------------------------------------------------------------------

_NAMESPACES = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"'
)

_META = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta {_NAMESPACES} office:version="1.3"><office:meta>
<dc:title>Centrifuge manual</dc:title><dc:subject>Safety</dc:subject>
<meta:keyword>rotor</meta:keyword><meta:keyword>gloves</meta:keyword>
<dc:description>How to run it</dc:description><dc:creator>Ada Lovelace</dc:creator>
</office:meta></office:document-meta>"""

_TEXT_BODY = """<office:text>
<text:h text:outline-level="1">Before the run</text:h>
<text:p>Balance<text:s text:c="3"/>the <text:span>rotor</text:span>.<text:tab/>Always.<text:line-break/>Café ünïcode</text:p>
<text:list><text:list-item><text:p>Close the lid</text:p></text:list-item></text:list>
<table:table table:name="Speeds"><table:table-column/>
<table:table-row><table:table-cell><text:p>Rotor A</text:p></table:table-cell>
<table:table-cell><text:p>4000 rpm</text:p></table:table-cell></table:table-row></table:table>
<text:h text:outline-level="2">After <text:span>the</text:span> run</text:h>
<text:tracked-changes><text:changed-region><text:deletion><text:p>Deleted words</text:p></text:deletion>
</text:changed-region></text:tracked-changes>
<text:p>Wear gloves<text:note><text:note-citation>1</text:note-citation><text:note-body>
<text:p>Nitrile gloves</text:p></text:note-body></text:note> when you open it.</text:p>
</office:text>"""

_SPREADSHEET_BODY = """<office:spreadsheet>
<table:table table:name="Runs"><table:table-column table:number-columns-repeated="2"/>
<table:table-row><table:table-cell office:value-type="string"><text:p>Sample</text:p></table:table-cell>
<table:table-cell office:value-type="string"><text:p>Speed</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell office:value-type="string"><text:p>Blood</text:p></table:table-cell>
<table:table-cell office:value-type="float" office:value="3500"><text:p>3500</text:p></table:table-cell>
<table:table-cell table:number-columns-repeated="1000"/></table:table-row></table:table>
<table:table table:name="Notes"><table:table-row><table:table-cell office:value-type="string">
<text:p>Recalibrated</text:p></table:table-cell></table:table-row></table:table>
</office:spreadsheet>"""

_PRESENTATION_BODY = """<office:presentation>
<draw:page draw:name="page1"><draw:frame presentation:class="title"><draw:text-box>
<text:p>Rotor safety</text:p></draw:text-box></draw:frame>
<draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item>
<text:p>Balance the tubes</text:p></text:list-item></text:list></draw:text-box></draw:frame>
<presentation:notes><draw:frame><draw:text-box><text:p>Speaker: mention the lid</text:p>
</draw:text-box></draw:frame></presentation:notes></draw:page>
<draw:page draw:name="page2"><draw:frame><draw:text-box><text:p>Questions?</text:p></draw:text-box>
</draw:frame></draw:page>
</office:presentation>"""


def _odf(mimetype: str, body: str, meta: str | None = _META) -> bytes:
    content = (f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content {_NAMESPACES} '
               f'office:version="1.3"><office:body>{body}</office:body></office:document-content>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest '
                'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
                f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mimetype}"/>'
                '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
                '</manifest:manifest>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/manifest.xml", manifest)
        archive.writestr("content.xml", content)
        if meta is not None:
            archive.writestr("meta.xml", meta)
    return buffer.getvalue()


_ODT = "application/vnd.oasis.opendocument.text"
_ODS = "application/vnd.oasis.opendocument.spreadsheet"
_ODP = "application/vnd.oasis.opendocument.presentation"


@pytest.mark.parametrize("mimetype, body", [
    (_ODT, _TEXT_BODY), (_ODS, _SPREADSHEET_BODY), (_ODP, _PRESENTATION_BODY),
    (_ODT + "-template", _TEXT_BODY), (_ODS + "-template", _SPREADSHEET_BODY),
    (_ODP + "-template", _PRESENTATION_BODY),
])
def test_libmagic_names_generated_odf_files_with_module_mime_types(mimetype, body):
    data = _odf(mimetype, body)
    assert zipfile.ZipFile(io.BytesIO(data)).infolist()[0].compress_type == zipfile.ZIP_STORED
    assert _mime(data) == mimetype
    assert _mime(data) in odf.MIME_TYPES


def test_odt_text_headlines_and_metadata():
    prepared = prepare_odf(_odf(_ODT, _TEXT_BODY), "file:///m.odt", _ODT, {})
    assert prepared.title == "Centrifuge manual"
    assert prepared.metadata == "Ada Lovelace Safety rotor gloves How to run it"
    assert prepared.headlines == ["Before the run", "After the run"]
    lines = prepared.content.splitlines()
    assert lines[:2] == ["Before the run", "Balance   the rotor.\tAlways."]
    assert "Café ünïcode" in lines
    assert "Close the lid" in lines
    assert "Rotor A 4000 rpm" in lines
    assert "Wear gloves when you open it." in lines
    assert "Nitrile gloves" in lines  # the footnote's text, after its paragraph
    assert "Deleted words" not in prepared.content
    assert "1" not in lines  # no note citation


def test_ods_sheets_rows_and_cells():
    prepared = prepare_odf(_odf(_ODS, _SPREADSHEET_BODY), "file:///runs.ods", _ODS, {})
    assert prepared.content.splitlines() == ["Runs", "Sample Speed", "Blood 3500", "Notes", "Recalibrated"]
    assert prepared.title == "Centrifuge manual"
    assert prepared.headlines == []


def test_odp_slides_and_notes():
    prepared = prepare_odf(_odf(_ODP, _PRESENTATION_BODY, meta=None), "file:///talk.odp", _ODP, {})
    assert prepared.content.splitlines() == [
        "Rotor safety", "Balance the tubes", "Speaker: mention the lid", "Questions?"]
    assert (prepared.title, prepared.metadata) == ("", "")


def test_odf_template_is_read_like_the_document():
    data = _odf(_ODT + "-template", _TEXT_BODY)
    assert prepare_odf(data, "file:///m.ott", _ODT + "-template", {}).title == "Centrifuge manual"


@pytest.mark.parametrize("data", [
    pytest.param(_odf(_ODT, _TEXT_BODY)[:300], id="truncated"),
    pytest.param(b"PK\x03\x04 definitely not a zip", id="garbage"),
    pytest.param(_odf(_ODT, "<office:text><text:p>unclosed</office:text>"), id="bad-xml"),
    pytest.param(_odf("application/epub+zip", _TEXT_BODY), id="other-zip"),
])
def test_corrupt_odf_raises_preparation_error(data):
    with pytest.raises(PreparationError) as caught:
        prepare_odf(data, "file:///broken.odt", _ODT, {})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("part", ["content.xml", "styles.xml", "meta.xml"])
def test_odf_rejects_entity_expansion(part):
    bomb = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            f'<office:document-content {_NAMESPACES}><office:body><office:text><text:p>&b;</text:p>'
            '</office:text></office:body></office:document-content>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", _ODT)
        archive.writestr(part, bomb)
    with pytest.raises(PreparationError, match="EntitiesForbidden"):
        prepare_odf(buffer.getvalue(), "file:///bomb.odt", _ODT, {})


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.mark.parametrize("members, reason", [
    pytest.param({"mimetype": _ODT, "Thumbnails/thumbnail.png": "png"}, "broken OpenDocument package: none of",
                 id="mimetype-but-no-xml"),
    pytest.param({"content.xml": "<x/>", "styles.xml": "<x/>"}, "no mimetype member", id="no-mimetype"),
    pytest.param({"mimetype": "application/zip", "content.xml": "<x/>"}, "mimetype 'application/zip'",
                 id="other-type"),
])
def test_broken_odf_package_is_refused_with_its_reason(members, reason):
    with pytest.raises(PreparationError, match=reason):
        prepare_odf(_zip(members), "file:///hostile.odt", _ODT, {})


# -- OpenDocument files LibreOffice ships ---------------------------------------------------------------

_LIBREOFFICE = "libreoffice-common"
_TEMPLATES = "usr/lib/libreoffice/share/template/common"


@pytest.mark.parametrize("name", ["Default", "Modern", "Simple"])
def test_styles_only_template_is_a_document_with_its_title(name):
    """LibreOffice's page-style templates hold styles.xml and meta.xml but no content.xml."""
    path = debian_file(_LIBREOFFICE, f"{_TEMPLATES}/styles/{name}.ott")
    assert "content.xml" not in zipfile.ZipFile(path).namelist()
    prepared = prepare_odf(path.read_bytes(), path.as_uri(), _ODT + "-template", {})
    assert (prepared.title, prepared.content) == (name, "")


def test_headers_and_footers_come_from_styles_xml_without_page_fields():
    path = debian_file(_LIBREOFFICE, f"{_TEMPLATES}/wizard/report/cnt-01.ott")
    content = prepare_odf(path.read_bytes(), path.as_uri(), _ODT + "-template", {}).content
    assert content.endswith("Header\nHeader Left\nHeader Right\nFooter\nFooter Left\nFooter Right")
    sheet = debian_file(_LIBREOFFICE, f"{_TEMPLATES}/wizard/styles/default.ots")
    assert "???" not in prepare_odf(sheet.read_bytes(), sheet.as_uri(), _ODS + "-template", {}).content


def test_drawing_template_is_read():
    path = debian_file(_LIBREOFFICE, f"{_TEMPLATES}/draw/bpmn.otg")
    assert MimeSniffer()(path.read_bytes(), path.as_uri()) in odf.MIME_TYPES
    prepared = prepare_odf(path.read_bytes(), path.as_uri(), "application/vnd.oasis.opendocument.graphics", {})
    assert prepared.title == "BPMN" and "Collection Data Object" in prepared.content


def test_every_opendocument_file_libreoffice_ships_is_prepared_without_failure():
    """Every file the sniffer calls OpenDocument goes through the built-in chain: its text, or a clean
    metadata-only document for types no preparator reads (a database); never a failure."""
    root = debian_file(_LIBREOFFICE, f"{_TEMPLATES}/styles/Default.ott").parents[5]
    sniff, read = MimeSniffer(), {}
    chain = Chain(BUILTIN, sniff)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        mimetype = sniff(data, path.as_uri())
        if mimetype.startswith("application/vnd.oasis.opendocument."):
            prepared, errors = chain.run(data, path.as_uri(), mimetype)
            assert (errors, prepared is not None) == ([], True), path
            read[path.suffix] = read.get(path.suffix, 0) + bool(prepared.content)
    assert {".ott", ".ots", ".otp", ".otg", ".odt", ".ods"} <= read.keys()
    assert read[".ott"] > 60 and read[".otg"] == 1


# -- RTF -------------------------------------------------------------------------------------------------

_RTF = (
    rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fswiss Arial;}}"
    rb"{\info{\title Caf\'e9 r\'e9sum\'e9}{\author Ada Lovelace}}"
    rb"\pard\f0\fs24 Na\'efve caf\'e9 na\'efvet\'e9 \u8364? 5\par"
    rb"\trowd\cellx2000\cellx4000 Rotor A\cell 4000 rpm\cell\row"
    rb"\pard Wear gloves.\par}"
)


def test_libmagic_names_generated_rtf_with_module_mime_types():
    assert _mime(_RTF) in rtf.MIME_TYPES


def test_rtf_text_accents_table_and_title():
    prepared = prepare_rtf(_RTF, "file:///m.rtf", "text/rtf", {})
    assert prepared.title == "Café résumé"
    assert "Naïve café naïveté € 5" in prepared.content
    assert "Rotor A" in prepared.content and "4000 rpm" in prepared.content
    assert "Wear gloves." in prepared.content
    assert "Ada Lovelace" not in prepared.content and "Arial" not in prepared.content


def test_rtf_without_info_has_no_title_and_honours_code_page():
    data = rb"{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8\'e2\'e5\'f2\par}"
    prepared = prepare_rtf(data, "file:///ru.rtf", "application/rtf", {})
    assert (prepared.title, prepared.content) == ("", "Привет")


def test_non_rtf_raises_preparation_error():
    with pytest.raises(PreparationError):
        prepare_rtf(b"plain words", "file:///x.rtf", "text/rtf", {})


def test_rtf_headers_and_footers_are_text():
    """striprtf skips {\\header …} as a destination; a letterhead is what people search for (Tika reads it)."""
    from tests.package_files import tika_test_document

    content = prepare_rtf(tika_test_document("microsoft", "testRTFBoldPlain.rtf"), "file:///a.rtf", "", {}).content
    assert content.startswith("Animal Hospital\n(555) 555-1212") and "Canine / Retriever/Golden" in content


def test_header_dates_are_furniture_and_hidden_headers_give_none():
    """A page header's date and time fields show the time the file was last laid out (Tika writes them):
    searched through the furniture field, not shown in the text; a header turned off gives none."""
    data = tika_test_document("miscoffice", "testFooter.ods")
    prepared = prepare_odf(data, "file:///t/testFooter.ods", _ODS, {})
    assert prepared.furniture == "10/26/2011\n11:13:57"
    assert "Here is a footer in the center area" in prepared.content and "2011" not in prepared.content
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        parts = {name: package.read(name) for name in package.namelist()}
    parts["styles.xml"] = parts["styles.xml"].replace(b"<style:header>", b'<style:header style:display="false">')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for name, body in parts.items():
            package.writestr(name, body)
    assert prepare_odf(out.getvalue(), "file:///t/hidden.ods", _ODS, {}).furniture == ""
