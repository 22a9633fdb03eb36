"""Mail in the stores people keep it in, on files nobody here made: Outlook messages (.msg) and personal
folders (.pst) from Apache Tika's test documents (Maven Central), mbox files from Perceval's tests and raw
RFC 822 messages without .eml from HyperKitty's tests (PyPI source distributions), through the MIME decision,
the preparators and a real crawl found by ``beamtrawl search``."""

from __future__ import annotations

import json

import pytest

from tests.package_files import PY_LIB, PY_TESTSUITE, debian_file, pypi_sdist_file, tika_test_document
from tests.preparing import SNIFF, prepare_bytes

PERCEVAL = ("perceval", "1.6.1")
HYPERKITTY = ("HyperKitty", "1.3.12")


def perceval(name: str) -> bytes:
    return pypi_sdist_file(*PERCEVAL, f"tests/data/{name}")


def hyperkitty(name: str) -> bytes:
    return pypi_sdist_file(*HYPERKITTY, f"hyperkitty/tests/testdata/{name}")


def outlook(name: str) -> bytes:
    return tika_test_document("microsoft", name)


def prepare(data: bytes, name: str):
    """(prepared, failures, MIME type) as a crawl's preparing process makes them."""
    return prepare_bytes(data, f"file:///mail/{name}")


@pytest.mark.parametrize("name, title, to, phrase", [
    ("testMSG.msg", "MIME registry use cases from Jukka Zitting <jukka.zitting@gmail.com>",
     "tika-dev@lucene.apache.org", "making the type detection code more modular and extensible"),
    ("test-outlook2003.msg", "Welcome to Microsoft Office Outlook 2003 from Microsoft Outlook 2003 Team",
     "New Outlook User <None>", "Thank you for using Outlook!"),  # libmagic: only "OLE storage"
    ("testMSG_forwarded.msg", "FW: Testing from Paul Allan Hill <paul@metajure.com>",
     "Paul Allan Hill <paul@metajure.com>", "Original Body"),
    ("testMSG_Appointment.msg", "Quick brown fox from Allison, Timothy B.",
     "Allison, Timothy B. <tallison@mitre.org>", "This is a meeting to discuss jumping"),
    # strings in Big5 (code page 950, given only by PR_INTERNET_CPID): extract-msg alone read them as ISO-8859-15
    ("testMSG_chinese.msg", "Alfresco MSG format testing ( MSG 格式測試 ) from Tests Chang@FT (張毓倫)",
     "Tests Chang@FT (張毓倫) <tests.chang@fengttt.com>", "恭喜 HQ 保全課 陳奎良 高票當選雲林縣總工會 100 年度模範勞工代表"),
])
def test_outlook_message_is_a_mail_with_title_fields_and_body(name, title, to, phrase):
    prepared, errors, mimetype = prepare(outlook(name), name)
    assert (errors, mimetype) == ([], "application/vnd.ms-outlook")
    assert prepared.title == title and prepared.fields["to"] == to
    assert prepared.fields["from"] in title and prepared.fields["date"]
    assert phrase in " ".join(prepared.content.split())


@pytest.mark.parametrize("code_page", [20127, 65001, 65000, 1200, 1201, 12000, 0, 99999])
def test_outlook_message_whose_internet_code_page_its_strings_are_not_in_is_read_as_before(code_page):
    """Tika's Big5 message with a PR_INTERNET_CPID its bytes are not in (US-ASCII, UTF-8, UTF-7: the strings did
    not decode and the whole message was one failure; UTF-16 and UTF-32: it read empty) or none known is read as
    extract-msg reads it without one (ISO-8859-15): Latin letters, but every ASCII word and the message kept."""
    entry = bytes.fromhex("0300de3f06000000") + (950).to_bytes(8, "little")  # PR_INTERNET_CPID = 950
    assert entry in outlook("testMSG_chinese.msg")
    data = outlook("testMSG_chinese.msg").replace(entry, entry[:8] + code_page.to_bytes(8, "little"))
    prepared, errors, _ = prepare(data, "cp.msg")
    assert errors == [] and prepared.title.startswith("Alfresco MSG format testing ( MSG ")
    assert prepared.fields["to"].endswith("<tests.chang@fengttt.com>") and "HQ" in prepared.content


def test_outlook_message_attachments_are_prepared_by_their_own_type():
    """A Word file and a text file attached; a message attached to a message, with a PDF beside it."""
    prepared, errors, _ = prepare(outlook("testMSG_att_doc.msg"), "testMSG_att_doc.msg")
    assert errors == []
    word = prepared.content.split("attachment: test-unicode.doc\n", 1)[1]
    assert word.startswith("école (00E9)\neuro : € (20AC)")  # the .doc's text, read by the legacy preparator
    assert [a["name"] for a in json.loads(prepared.fields["attachments"])] == ["test-unicode.doc", "pj1.txt"]
    prepared, errors, _ = prepare(outlook("testMSG_att_msg.msg"), "testMSG_att_msg.msg")
    assert errors == []
    inner = prepared.content.split("attachment: Test Attachment\n", 1)[1]
    assert inner.startswith("Test Attachment from Nick Booth <nick.booth@pof.com.au>\nSubject: Test Attachment")
    assert "Blah blah blah\nattachment: smbprn.00009008.KdcPjl.pdf\n" in inner  # then the PDF's text
    assert "Sent: Friday, 18 June 2010 9:52 AM" in inner


def test_outlook_folders_each_message_inlined_under_its_title():
    prepared, errors, mimetype = prepare(outlook("testPST.pst"), "testPST.pst")
    assert (errors, mimetype) == ([], "application/vnd.ms-outlook-pst")
    assert prepared.title == "" and prepared.fields["messages"] == "7"
    assert prepared.headlines[0] == ("Début du fichier de données Outlook: Re: Feature Generators from "
                                     "Jörn Kottmann <kottmann@gmail.com>")
    assert "the PreviousMapFeatureGenerator remebers the last" in prepared.content
    assert "Process loops infintely processing a CHM file" in prepared.content


def test_outlook_folders_body_plain_else_html_else_rtf():
    """Tika's file of one message forwarded as HTML, as RTF and as plain text."""
    prepared, errors, _ = prepare(outlook("testPST_variousBodyTypes.pst"), "various.pst")
    assert errors == [] and prepared.fields["messages"] == "4"
    for said in ("This is the original email (html)", "Forwarded (html)", "Forwarded RTF",
                 "Forwarded plain text"):
        assert said in prepared.content, said
    assert "{\\rtf" not in prepared.content and "<html" not in prepared.content


def test_outlook_folders_names_empty_folders_too():
    """Tika lists every folder; "Deleted Items" and "SPAM Search Folder 2" hold no message."""
    prepared, errors, _ = prepare(outlook("testPST_variousBodyTypes.pst"), "various.pst")
    assert errors == []
    folders = prepared.metadata.splitlines()
    assert "Top of Outlook data file/Deleted Items" in folders and "SPAM Search Folder 2" in folders
    assert "Top of Outlook data file/Inbox/tmp" in folders


def test_mbox_messages_each_inlined_with_a_headline():
    data = perceval("mbox/mbox_complex.mbox")
    prepared, errors, mimetype = prepare(data, "gnome.mbox")
    assert (errors, mimetype) == ([], "application/mbox")  # libmagic: text/plain
    assert prepared.headlines == ["Re: Revisiting the Gnome Bindings from Eugenia Loli-Queru <eloli@hotmail.com>",
                                  "Re: Low memory hacks from danilo@gnome.org"]
    assert prepared.fields["messages"] == "2"
    assert SNIFF(perceval("mbox/mbox_multipart.mbox"), "file:///m/multipart") == "application/mbox"  # magic: HTML
    prepared, errors, _ = prepare(perceval("pipermail/pipermail_2016_april.mbox"), "april.mbox")
    assert errors == [] and prepared.fields["messages"] == "3"
    assert "GrimoireLab is\nintended to become a full platform" in prepared.content


def test_mbox_of_one_message_is_that_message():
    prepared, errors, _ = prepare(perceval("mbox/mbox_single.mbox"), "single.mbox")
    assert errors == [] and prepared.title == "[List-name] Protocol Buffers anyone? from goran at domain.com " \
                                              "(Göran Lastname)"
    assert prepared.fields["date"] == "Wed, 01 Dec 2010 14:26:40 +0100"


@pytest.mark.parametrize("name, title, phrase", [
    ("attachment-1.txt", "gradle 1.0 from gil <puntogil@libero.it>", "fn:gil"),  # the vCard attached
    ("non-ascii-headers.txt", None, None),
])
def test_raw_mail_named_txt_is_mail(name, title, phrase):
    """HyperKitty's test messages: headers first (some with an mbox "From " line first), named .txt;
    libmagic calls them text/plain."""
    data = hyperkitty(name)
    prepared, errors, mimetype = prepare(data, name)
    assert errors == [] and mimetype in ("message/rfc822", "application/mbox")
    assert "Received:" not in prepared.content  # the headers are read, not indexed as text
    if title is not None:
        assert prepared.title == title and phrase in prepared.content


def test_text_that_only_looks_like_headers_stays_text():
    """A Debian control-style file and an HTTP-like head are not mail: no header only mail carries."""
    for text in (b"Package: foo\nVersion: 1.0\nDescription: a tool\n\nmore\n",
                 b"Content-Type: text/plain\nContent-Length: 3\n\nabc\n",
                 b"From the start of the story\nSubject: none\n"):
        assert SNIFF(text, "file:///x/notes.txt") == "text/plain", text


def test_cpython_mails_named_txt_are_mail():
    """Every one of CPython's test mails that begins with a mail's headers is a mail now (libmagic said
    text/plain of some); those with an mbox "From " line first are mailboxes of one message. What stays text:
    a MIME entity with no header only mail carries (MIME-Version and Content-Type alone), and a digest's body."""
    folder = debian_file(PY_TESTSUITE, f"{PY_LIB}/test/test_email/data/msg_01.txt").parent
    kinds = {path.name: SNIFF(path.read_bytes(), f"file:///m/{path.name}") for path in folder.glob("msg_*.txt")}
    assert len(kinds) > 40
    text = {name for name, kind in kinds.items() if kind == "text/plain"}
    assert text == {"msg_18.txt", "msg_19.txt", "msg_37.txt", "msg_38.txt", "msg_39.txt", "msg_40.txt"}
    assert {kinds["msg_25.txt"], kinds["msg_43.txt"]} == {"application/mbox"}
    assert set(kinds.values()) == {"text/plain", "message/rfc822", "application/mbox"}


def test_crawl_finds_each_message_in_its_store(tmp_path, make_config, crawl, search):
    root = tmp_path / "mail"
    root.mkdir()
    files = {"testMSG.msg": outlook("testMSG.msg"), "forwarded.msg": outlook("testMSG_forwarded.msg"),
             "folders.pst": outlook("testPST.pst"), "gnome.mbox": perceval("mbox/mbox_complex.mbox"),
             "gradle.txt": hyperkitty("attachment-1.txt"), "att_doc.msg": outlook("testMSG_att_doc.msg")}
    for name, data in files.items():
        (root / name).write_bytes(data)
    config = make_config(root)
    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))

    def found(query: str) -> list[str]:
        return sorted(hit["url"].rsplit("/", 1)[1] for hit in search(config, query))

    assert found('"making the type detection code more modular"') == ["testMSG.msg"]
    assert found('"Original Body"') == ["forwarded.msg"]
    assert found('"Process loops infintely processing a CHM file"') == ["folders.pst"]
    assert found('"Revisiting the Gnome Bindings"') == ["gnome.mbox"]
    assert found("puntogil") == ["gradle.txt"]
    assert found("copyright 00A9") == ["att_doc.msg"]  # the attached Word file's text
    hits = {h["url"].rsplit("/", 1)[1]: h for h in search(config, "Zitting")}
    assert hits["testMSG.msg"]["title"] == "MIME registry use cases from Jukka Zitting <jukka.zitting@gmail.com>"
    assert hits["testMSG.msg"]["mimetype"] == "application/vnd.ms-outlook"
