"""XML, mail and archive preparators on real bytes made here: namespaces, XXE and entity bombs, mails in
several charsets with attachments and broken headers, ZIP/JAR/TAR archives, a zip bomb and zip slip."""

from __future__ import annotations

import io
import json
import struct
import tarfile
import time
import zipfile
from email.message import EmailMessage
from pathlib import Path

import magic
import pytest
from beamtrawl.transforms.preparators import PreparationError, archive, mail, xml
from beamtrawl.transforms.preparators.archive import prepare_archive
from beamtrawl.transforms.preparators.mail import prepare_mail
from beamtrawl.transforms.preparators.xml import prepare_xml

from tests.package_files import PY_TESTSUITE, PYTHON, debian_file, tika_test_document
from tests.preparing import prepare_bytes

MiB = 1024 * 1024
PASSWD = Path("/etc/passwd").read_text().splitlines()[0]  # "root:x:0:0:..."


def sniff(data: bytes) -> str:
    return magic.Magic(mime=True).from_buffer(data[:64 * 1024])


# -- XML -------------------------------------------------------------------------------------------------

def test_xml_with_namespaces():
    data = """<?xml version="1.0" encoding="ISO-8859-1"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <title>Grüße aus Köln</title>
  <entry><dc:creator>Jürgen</dc:creator><summary>Die zwölf <b>Äpfel</b></summary></entry>
</feed>""".encode("latin-1")
    assert sniff(data) in xml.MIME_TYPES
    prepared = prepare_xml(data, "file:///feed.xml", "text/xml", {})
    assert prepared.title == "Grüße aus Köln"
    assert prepared.content.split("\n") == ["Grüße aus Köln", "Jürgen", "Die zwölf", "Äpfel"]


@pytest.mark.parametrize("data", [
    b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
    b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><x>a</x>',
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
               for i in range(1, 10))
    + b"]><lolz>&lol9;</lolz>",
    b'<?xml version="1.0"?><x><unclosed></x>',
], ids=["xxe", "xxe-parameter-entity", "billion-laughs", "malformed"])
def test_xml_refuses_entities_and_malformed(data):
    assert sniff(data) in xml.MIME_TYPES
    start = time.monotonic()
    with pytest.raises(PreparationError) as caught:
        prepare_xml(data, "file:///evil.xml", "text/xml", {})
    assert time.monotonic() - start < 1
    assert PASSWD not in str(caught.value) and "\n" not in str(caught.value)


def test_xml_doctype_without_entities_is_fine_and_reads_nothing():
    data = b'<?xml version="1.0"?><!DOCTYPE x SYSTEM "file:///etc/passwd"><x>hello</x>'
    assert prepare_xml(data, "file:///a.xml", "text/xml", {}).content == "hello"


# -- mail ------------------------------------------------------------------------------------------------

def new_mail(subject="Quarterly report", **extra) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Jürgen Müller <juergen@example.org>"  # a From line first, as libmagic wants it
    msg["To"] = "Anna <anna@example.org>, bob@example.org"
    msg["Cc"] = "carol@example.org"
    msg["Date"] = "Mon, 01 Jan 2024 10:00:00 +0100"
    msg["Subject"] = subject
    for name, value in extra.items():
        msg[name] = value
    return msg


def prepare(msg) -> object:
    data = msg if isinstance(msg, bytes) else bytes(msg)
    assert sniff(data) in mail.MIME_TYPES
    return prepare_mail(data, "file:///m.eml", "message/rfc822", {})


def test_mail_multipart_alternative_prefers_plain_text():
    msg = new_mail("Grüße")
    msg.set_content("Plain body: die zwölf Äpfel.")
    msg.add_alternative("<html><body><p>HTML body must not be doubled</p></body></html>", subtype="html")
    prepared = prepare(msg)
    assert prepared.title == "Grüße from Jürgen Müller <juergen@example.org>"
    assert prepared.content.startswith(
        "Subject: Grüße\nFrom: Jürgen Müller <juergen@example.org>\n"
        "To: Anna <anna@example.org>, bob@example.org\nCc: carol@example.org\n"
        "Date: Mon, 01 Jan 2024 10:00:00 +0100\n\n")
    assert "die zwölf Äpfel" in prepared.content and "doubled" not in prepared.content
    assert json.loads(prepared.fields["attachments"]) == []


def test_mail_html_only_is_converted_to_text():
    msg = new_mail()
    msg.set_content("<html><head><style>p{color:red}</style></head><body><h1>Hallo</h1>"
                    "<p>Der B&auml;cker &ouml;ffnet fr&uuml;h.</p><script>alert(1)</script></body></html>",
                    subtype="html", charset="iso-8859-1")
    content = prepare(msg).content
    assert "Der Bäcker öffnet früh." in content
    assert "<p>" not in content and "alert" not in content and "color:red" not in content


@pytest.mark.parametrize("charset, text", [
    ("iso-8859-1", "Grüße aus Köln, die Straße ist süß."),
    ("shift_jis", "日本語のメール本文です。よろしくお願いします。"),
])
def test_mail_body_charsets(charset, text):
    msg = new_mail()
    msg.set_content(text.encode(charset), maintype="text", subtype="plain",
                    params={"charset": charset}, cte="8bit" if charset == "iso-8859-1" else "base64")
    assert text in prepare(msg).content


def test_mail_attachments_are_listed():
    msg = new_mail("Unterlagen")
    msg.set_content("Anbei die Unterlagen.")
    pdf = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="Bericht 2024.pdf")
    docx = b"PK\x03\x04" + bytes(200)
    msg.add_attachment(docx, maintype="application",
                       subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                       filename="Übersicht.docx")
    prepared = prepare(msg)
    assert "Anbei die Unterlagen." in prepared.content
    assert prepared.content.endswith("attachment: Bericht 2024.pdf\nattachment: Übersicht.docx")
    assert json.loads(prepared.fields["attachments"]) == [
        {"name": "Bericht 2024.pdf", "mimetype": "application/pdf", "size": len(pdf)},
        {"name": "Übersicht.docx",
         "mimetype": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
         "size": len(docx)},
    ]


@pytest.mark.parametrize("name, phrase", [
    # a delivery report's status part (message/delivery-status): as an attachment it gave nothing
    ("msg_43.txt", "Diagnostic-Code: smtp; 550 5.7.1 Message content rejected, id=01956-02-2"),
    # Content-Type's boundary parameter is cut by a broken line: the parts' text is still the message's
    ("msg_25.txt", "554 Too many hops 19 (17 max)"),
])
def test_delivery_reports_are_read(name, phrase):
    path = f"usr/lib/{PYTHON}/test/test_email/data/{name}"
    prepared, errors, _mimetype = prepare_bytes(debian_file(PY_TESTSUITE, path).read_bytes(), f"file:///{name}")
    assert errors == [] and phrase in " ".join(prepared.content.split())


def test_mail_with_malformed_headers_is_still_prepared():
    raw = (b'From: <<<broken@@ "unclosed\r\n'
           b"To: undisclosed-recipients:;, =?utf-8?q?\r\n"
           b"Cc: a@b.c,,,@@,\r\n"
           b"Date: not a date at all\r\n"
           b"Subject: =?x-unknown?q?abc?= Gr\xfc\xdfe raw 8bit\r\n"
           b'Content-Type: text/plain; charset="utf-8\r\n'
           b"\r\nBody text h\xc3\xa9llo\r\n")
    prepared = prepare(raw)
    assert prepared.title == '=?x-unknown?q?abc?= Grüße raw 8bit from <<<broken@@ "unclosed'
    assert "Date: not a date at all" in prepared.content
    assert "Body text héllo" in prepared.content


# -- archives --------------------------------------------------------------------------------------------

def make_zip(entries: dict[str, bytes], first_extra: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive_file:
        for i, (name, data) in enumerate(entries.items()):
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if i == 0:
                info.extra = first_extra
            archive_file.writestr(info, data)
    return buffer.getvalue()


def make_tar(entries: dict[str, bytes], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive_file:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            archive_file.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


ENTRIES = {
    "readme.txt": "Grüße aus Köln".encode("latin-1"),
    "docs/": b"",
    "docs/deep/notes_2024-v1.md": "# Notizen\nDie zwölf Äpfel".encode(),
    "image.png": b"\x89PNG\r\n\x1a\n" + bytes(100),
}


def check_listing(prepared):
    for line in ("readme.txt", "readme txt", "docs/deep/notes_2024-v1.md", "docs deep notes 2024 v1 md",
                 "image.png", "image png"):
        assert line in prepared.content.split("\n")
    assert "Grüße aus Köln" in prepared.content and "Die zwölf Äpfel" in prepared.content
    assert "PNG" not in prepared.content
    assert prepared.fields == {"entries": "4", "truncated": "false"}


@pytest.mark.parametrize("data", [
    make_zip(ENTRIES),
    make_tar(ENTRIES, "w"),
    make_tar(ENTRIES, "w:gz"),
], ids=["zip", "tar", "tar.gz"])
def test_archive_names_and_text(data):
    assert sniff(data) in archive.MIME_TYPES
    check_listing(prepare_archive(data, "file:///a", sniff(data), {}))


def test_jar_as_the_jar_tool_writes_it():
    # The jar tool marks the first entry with the 0xCAFE extra field; libmagic calls that a Java archive.
    data = make_zip({"META-INF/": b"", "META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\r\n\r\n",
                     "org/example/Main.class": b"\xca\xfe\xba\xbe" + bytes(50)},
                    first_extra=struct.pack("<HH", 0xCAFE, 0))
    assert sniff(data) == "application/java-archive" and sniff(data) in archive.MIME_TYPES
    prepared = prepare_archive(data, "file:///a.jar", sniff(data), {})
    assert "org example Main class" in prepared.content and "Manifest-Version: 1.0" in prepared.content


@pytest.mark.parametrize("filler", [b"\0", b"A"], ids=["zeros", "text"])
def test_zip_bomb_stops_at_the_byte_bound(filler):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive_file:
        for name in ("bomb1.txt", "bomb2.txt"):
            with archive_file.open(name, "w") as entry:
                for _ in range(100):
                    entry.write(filler * MiB)
    data = buffer.getvalue()
    assert len(data) < 1 * MiB and sniff(data) in archive.MIME_TYPES
    start = time.monotonic()
    prepared = prepare_archive(data, "file:///bomb.zip", "application/zip", {"max_bytes": 2 * MiB})
    assert time.monotonic() - start < 5
    assert len(prepared.content) <= 2 * MiB + 1000
    assert prepared.fields["truncated"] == ("true" if filler == b"A" else "false")
    if filler == b"A":
        assert prepared.content.count("A") >= 2 * MiB - 8192


def test_tar_gz_bomb_stops_at_the_scan_bound():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive_file:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 200 * MiB
        archive_file.addfile(info, io.BytesIO(bytes(info.size)))
        info = tarfile.TarInfo("after.txt")
        archive_file.addfile(info, io.BytesIO(b""))
    prepared = prepare_archive(buffer.getvalue(), "file:///b.tgz", "application/gzip",
                               {"max_scan_bytes": 10 * MiB})
    assert prepared.fields == {"entries": "0", "truncated": "true"}


def test_max_entries():
    data = make_zip({f"f{i}.txt": b"x" for i in range(20)})
    prepared = prepare_archive(data, "file:///a.zip", "application/zip", {"max_entries": 5})
    assert prepared.fields == {"entries": "5", "truncated": "true"}
    assert "f4.txt" in prepared.content and "f5.txt" not in prepared.content


def test_a_source_tarball_of_two_thousand_files_is_read_whole():
    """bash-completion 2.5 as bash-doc ships it (1,959 entries): the bound of 1,000 entries stopped before its
    test fixtures and most completions; ImageMagick's, its 1,821st entry, is text now."""
    path = "usr/share/doc/bash/examples/bash-completion/bash-completion-2.5.tar.xz"
    prepared, errors, mimetype = prepare_bytes(debian_file("bash-doc", path).read_bytes(), f"file:///{path}")
    assert (errors, mimetype, prepared.partial) == ([], "application/x-xz-compressed-tar", "")
    assert "# bash completion for ImageMagick" in prepared.content


@pytest.mark.parametrize("make", [make_zip, lambda e: make_tar(e, "w")], ids=["zip", "tar"])
def test_zip_slip_names_are_only_listed(make, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = make({"../../evil.txt": b"evil text", "/etc/evil.conf": b"x=1"})
    prepared = prepare_archive(data, "file:///slip.zip", sniff(data), {})
    assert "../../evil.txt" in prepared.content.split("\n") and "evil text" in prepared.content
    assert "/etc/evil.conf" in prepared.content.split("\n")
    assert not list(tmp_path.parent.parent.glob("evil.txt")) and not Path("/etc/evil.conf").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_member_no_preparator_can_read_is_a_report_line():
    """A member that fails (a PDF cut in half) is named in the container's report line with the reason, the rest
    read: a member's text was lost without a word. A member of a type nothing reads (a picture) is no failure."""
    pdf = tika_test_document("pdf", "testPDF.pdf")
    png = debian_file(PY_TESTSUITE, f"usr/lib/{PYTHON}/test/imghdrdata/python.png").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zipped:
        zipped.writestr("whole.pdf", pdf)
        zipped.writestr("cut.pdf", pdf[: len(pdf) // 3])
        zipped.writestr("python.png", png)
    prepared, errors, _ = prepare_bytes(out.getvalue(), "file:///m/members.zip")
    assert errors == [] and "Apache Tika" in prepared.content
    assert prepared.partial.startswith("1 of 3 entries not readable (cut.pdf: pdf: ")


def test_odf_formula_object_is_read_as_its_mathml():
    """An equation inserted into a text document is an ODF object whose content is MathML, no office:body: read as
    XML (its terms, then its annotation, the formula as typed), not a failure."""
    prepared, errors, _ = prepare_bytes(tika_test_document("miscoffice", "testODFwithOOo3.odt"), "file:///m/f.odt")
    assert errors == [] and prepared.partial == ""
    assert "embedded: Object 2/" in prepared.content and "A classic example: a² + b^2 = c^2" in prepared.content


def test_not_an_archive():
    with pytest.raises(PreparationError, match="not a ZIP or TAR archive"):
        prepare_archive(b"just some bytes" * 100, "file:///x.zip", "application/zip", {})


def test_html_alternatives_own_words_are_furniture():
    """Tika's test mail whose HTML alternative says something else than its plain one: the plain text is the
    content; the HTML's lines that hold words the plain text lacks are searched (furniture), not shown."""
    data = tika_test_document("microsoft", "testEML_embedded_xhtml_and_img.eml")
    prepared = prepare_mail(data, "file:///t/m.eml", "message/rfc822", {})
    assert "Using inline content" in prepared.content and "XHTML" not in prepared.content
    assert "the ability of Apache Tika to extract content" in " ".join(prepared.furniture.split())
    msg = new_mail()
    msg.set_content("Plain body: die zwölf Äpfel.")
    msg.add_alternative("<html><body><p>Plain body: die zwölf Äpfel.</p></body></html>", subtype="html")
    assert prepare(msg).furniture == ""  # the same words twice: nothing more to search
    from beamtrawl.transforms.preparators.mbox import prepare_mbox

    box = b"From a@b Thu Jan  1 00:00:00 2024\n" + data.replace(b"\r\n", b"\n")
    twice = prepare_mbox(box + b"\n" + box, "file:///t/box", "application/mbox", {})
    assert twice.fields["messages"] == "2" and "Apache Tika to extract" in twice.furniture
