"""IMAP mailboxes against a real Dovecot the test starts, filled by IMAP APPEND with real-world
messages: multipart, HTML-only, non-UTF-8 charsets, PDF and DOCX attachments, an attached message,
malformed headers, nested and unicode folder names. Crawls are read-only (\\Seen flags unchanged),
incremental (known messages are not fetched again), follow deletions and a changed UIDVALIDITY."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
import ssl
from email.message import EmailMessage
from pathlib import Path

import pytest
from imapclient import IMAPClient

from tests.conftest import beamtrawl
from tests.package_files import PY_LIB, PY_TESTSUITE, debian_file
from tests.servers.dovecot import running_dovecot

USER, PASSWORD = "mailer", "Imap-Secret-5k"


def pdf_bytes(text: str) -> bytes:
    from reportlab.pdfgen import canvas
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.drawString(72, 720, text)
    pdf.save()
    return buffer.getvalue()


def docx_bytes(text: str) -> bytes:
    import docx
    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def mail(subject: str, body: str | None = None, html: str | None = None, charset: str = "utf-8",
         attachments: tuple = ()) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Ada Lovelace <ada@example.org>"
    msg["To"] = "team@example.org"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 02 Jan 2024 10:00:00 +0100"
    if body is not None:
        msg.set_content(body, charset=charset, cte="quoted-printable" if charset != "utf-8" else None)
        if html is not None:
            msg.add_alternative(html, subtype="html")
    elif html is not None:
        msg.set_content(html, subtype="html")
    for data, maintype, subtype, filename in attachments:
        if maintype == "message":
            msg.add_attachment(data)
        else:
            msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return bytes(msg)


MALFORMED = (b'From: <<<broken@@ "unclosed\r\n'
             b"To: undisclosed-recipients:;, =?utf-8?q?\r\n"
             b"Date: not a date at all\r\n"
             b"Subject: =?x-unknown?q?abc?= Gr\xfc\xdfe platypus 8bit\r\n"
             b'Content-Type: text/plain; charset="utf-8\r\n'
             b"\r\nBody text h\xc3\xa9llo platypus\r\n")


def fill(client: IMAPClient) -> dict[str, list[int]]:
    """APPEND the corpus; returns the UIDs per folder. Some messages are \\Seen, some not."""
    forwarded = EmailMessage()
    forwarded["Subject"] = "Inner narwhal note"
    forwarded["From"] = "bob@example.org"
    forwarded.set_content("The narwhal memo travels as an attached message.")
    corpus = {
        "INBOX": [
            (mail("Alternative walrus", body="Plain walrus text", html="<p>HTML <b>walrus</b> text</p>"), ()),
            (mail("HTML only", html="<html><body><h1>Heron</h1><p>only html heron</p></body></html>"),
             (b"\\Seen",)),
            (mail("Latin-1 café", body="Grüße aus Köln, crème brûlée", charset="iso-8859-1"), ()),
            (mail("Cyrillic", body="Привет мир, ёжик", charset="koi8-r"), (b"\\Seen", b"\\Flagged")),
            (mail("Reports attached", body="See the quokka files.", attachments=(
                (pdf_bytes("Calibrate the xylophone before every concert."), "application", "pdf",
                 "manual.pdf"),
                (docx_bytes("The zeppelin hangar needs a new roof."), "application",
                 "vnd.openxmlformats-officedocument.wordprocessingml.document", "review.docx"))), ()),
            (mail("Forwarded", body="Forwarding the narwhal note.",
                  attachments=((forwarded, "message", "rfc822", None),)), ()),
            (MALFORMED, ()),
        ],
        "Archive/2024 Q1": [(mail("Archived yak", body="An old yak story"), (b"\\Seen",))],
        "Übersicht": [(mail("Unicode folder", body="A wombat in a unicode folder"), ())],
    }
    uids: dict[str, list[int]] = {}
    for folder, messages in corpus.items():
        if folder != "INBOX":
            client.create_folder(folder)
        for raw, flags in messages:
            response = client.append(folder, raw, flags=flags)
            uids.setdefault(folder, []).append(int(response.split(b"]")[0].split()[-1]))
    return uids


def flags(client: IMAPClient) -> dict[tuple[str, int], tuple]:
    found = {}
    for _flags, _delim, folder in client.list_folders():
        if b"\\Noselect" in _flags:
            continue
        client.select_folder(folder, readonly=True)
        for uid, data in client.fetch(client.search(["ALL"]), ["FLAGS"]).items():
            found[(folder, uid)] = tuple(sorted(data[b"FLAGS"]))
    return found


def index_rows(folder: Path) -> dict[str, tuple[str, str]]:
    """{url: (title, content)} straight from the embedded index."""
    with sqlite3.connect(folder / "index.sqlite") as db:
        return {url: (title, content) for url, title, content in db.execute(
            "SELECT d.url, d.title, f.content FROM docs d JOIN docs_fts f ON f.rowid = d.rid")}


@pytest.fixture
def dovecot():
    with running_dovecot({USER: PASSWORD}) as server:
        yield server


def connect(server, scheme="imaps") -> IMAPClient:
    context = ssl.create_default_context(cafile=str(server.ca_file))
    client = IMAPClient("127.0.0.1", server.imaps_port, ssl=True, ssl_context=context)
    client.login(USER, PASSWORD)
    return client


def test_mailbox_crawls_read_only_incremental_deletes_and_uidvalidity(dovecot, tmp_path, make_config, crawl,
                                                                       search, monkeypatch):
    client = connect(dovecot)
    uids = fill(client)
    before = flags(client)
    monkeypatch.setenv("BT_IMAP_PASSWORD", PASSWORD)
    start = dovecot.url("imap")
    config = make_config(tmp_path, start=[{"url": start}], whitelist=[{"prefix": start}],
                         credentials=[{"url": start, "username": USER, "password": "${BT_IMAP_PASSWORD}"}],
                         imap={"ca_file": str(dovecot.ca_file)})  # STARTTLS, verified against the test CA

    first = crawl(config)
    assert first.code == 0, (first.report.get("problems"), first.stderr[-2000:])
    assert flags(client) == before  # EXAMINE and BODY.PEEK: no \Seen added, nothing changed
    validity = {name: client.folder_status(name, [b"UIDVALIDITY"])[b"UIDVALIDITY"]
                for name in ("INBOX", "Archive/2024 Q1", "Übersicht")}
    inbox = f"{start.rstrip('/')}/INBOX;UIDVALIDITY={validity['INBOX']}"
    archive = f"{start.rstrip('/')}/Archive/2024%20Q1;UIDVALIDITY={validity['Archive/2024 Q1']}"
    unicode = f"{start.rstrip('/')}/%C3%9Cbersicht;UIDVALIDITY={validity['Übersicht']}"
    i = uids["INBOX"]
    expected = {f"{inbox}/;UID={uid}" for uid in i} | {
        f"{inbox}/;UID={i[4]}/;SECTION=2", f"{inbox}/;UID={i[4]}/;SECTION=3",  # the PDF and the DOCX
        f"{inbox}/;UID={i[5]}/;SECTION=2",  # the attached message
        f"{archive}/;UID={uids['Archive/2024 Q1'][0]}", f"{unicode}/;UID={uids['Übersicht'][0]}"}
    rows = index_rows(tmp_path)
    assert set(rows) == expected
    assert rows[f"{inbox}/;UID={i[0]}"][0] == "Alternative walrus from Ada Lovelace <ada@example.org>"
    assert "Plain walrus text" in rows[f"{inbox}/;UID={i[0]}"][1]
    assert "only html heron" in rows[f"{inbox}/;UID={i[1]}"][1]
    assert "Grüße aus Köln, crème brûlée" in rows[f"{inbox}/;UID={i[2]}"][1]
    assert "Привет мир, ёжик" in rows[f"{inbox}/;UID={i[3]}"][1]
    assert "xylophone" in rows[f"{inbox}/;UID={i[4]}/;SECTION=2"][1]
    assert "zeppelin hangar" in rows[f"{inbox}/;UID={i[4]}/;SECTION=3"][1]
    assert rows[f"{inbox}/;UID={i[5]}/;SECTION=2"][0] == "Inner narwhal note from bob@example.org"
    assert "platypus" in rows[f"{inbox}/;UID={i[6]}"][1]
    assert [h["url"] for h in search(config, "wombat")] == [f"{unicode}/;UID={uids['Übersicht'][0]}"]

    # Second crawl: one message deleted, the archive folder re-created (a new UIDVALIDITY).
    client.select_folder("INBOX")
    client.delete_messages([i[1]])
    client.expunge()
    client.unselect_folder()
    client.delete_folder("Archive/2024 Q1")
    client.create_folder("Archive/2024 Q1")
    new_uid = int(client.append("Archive/2024 Q1", mail("Archived yak", body="An old yak story"))
                  .split(b"]")[0].split()[-1])
    new_validity = client.folder_status("Archive/2024 Q1", [b"UIDVALIDITY"])[b"UIDVALIDITY"]
    assert new_validity != validity["Archive/2024 Q1"]
    before = flags(client)

    second = crawl(config)
    assert second.code == 0, second.report.get("problems")
    assert flags(client) == before
    new_archive = f"{start.rstrip('/')}/Archive/2024%20Q1;UIDVALIDITY={new_validity}"
    expected = (expected - {f"{inbox}/;UID={i[1]}", f"{archive}/;UID={uids['Archive/2024 Q1'][0]}"}) | {
        f"{new_archive}/;UID={new_uid}"}
    assert set(index_rows(tmp_path)) == expected
    counts = second.counts
    assert (counts["new"], counts["read"], counts["deleted"], counts["unchanged"]) == (
        1, 1, 2, len(expected) - 1)

    for run in (first, second):
        for text in (json.dumps(run.report), run.stdout, run.stderr):
            assert PASSWORD not in text
    assert PASSWORD.encode() not in (tmp_path / "index.sqlite").read_bytes()


def test_imaps_folder_start_url_and_bad_login(dovecot, tmp_path, make_config, crawl):
    client = connect(dovecot)
    client.append("INBOX", mail("Hello", body="kiwi"))
    client.create_folder("INBOX/Sub")
    client.append("INBOX/Sub", mail("Nested", body="emu"))
    secret = tmp_path / "imap.password"
    secret.write_text(PASSWORD, encoding="utf-8")
    inbox = dovecot.url("imaps", "INBOX")
    config = make_config(tmp_path, start=[{"url": inbox}], whitelist=[{"prefix": inbox}],
                         credentials=[{"url": dovecot.url("imaps"), "username": USER,
                                       "password_file": str(secret)}],
                         imap={"ca_file": str(dovecot.ca_file)}, walk_budget=1)
    run = crawl(config, "--debug")  # even the debug log never shows the password
    assert run.code == 0, run.report.get("problems")
    assert run.counts["written"] == 2  # INBOX, and INBOX/Sub handed to the next round past the budget; over TLS
    assert PASSWORD not in run.stderr + run.stdout

    secret.write_text("wrong-password", encoding="utf-8")
    run = crawl(config)
    assert run.code == 1
    assert run.counts["kept"] == 2 and run.counts["deleted"] == 0
    reason = run.problems("discover")[inbox]
    assert reason.startswith("unavailable: ") and "wrong-password" not in reason


def test_unchanged_mailbox_needs_no_pipeline(dovecot, tmp_path, make_config, crawl):
    """The driver compares every folder's STATUS with what the last clean crawl saw (pipeline/unchanged.py)."""
    client = connect(dovecot)
    uids = fill(client)
    secret = tmp_path / "imap.password"
    secret.write_text(PASSWORD, encoding="utf-8")
    start = dovecot.url("imaps")
    settings = {"start": [{"url": start}], "whitelist": [{"prefix": start}],
                "credentials": [{"url": start, "username": USER, "password_file": str(secret)}],
                "imap": {"ca_file": str(dovecot.ca_file)}}
    config = make_config(tmp_path, **settings)
    first = crawl(config)
    assert first.code == 0 and "pipeline_skipped" not in first.report
    documents, rows = first.report["documents_in_index"], index_rows(tmp_path)

    client.select_folder("INBOX")
    client.add_flags([uids["INBOX"][0]], [b"\\Seen"])  # another client reads a message: flags are not indexed
    client.unselect_folder()
    again = crawl(config)
    assert again.code == 0, again.report.get("problems")
    assert "UIDVALIDITY" in again.report["pipeline_skipped"] and "nothing to read" in again.stdout
    assert (again.counts["unchanged"], again.counts["read"], again.counts["written"]) == (documents, 0, 0)
    assert again.report["documents_in_index"] == documents and index_rows(tmp_path) == rows
    assert PASSWORD not in json.dumps(again.report) + again.stdout + again.stderr

    # Each of these makes the next crawl run its pipeline, which then finds what changed.
    client.append("Übersicht", mail("Late wombat", body="A second wombat"))  # a new message
    run = crawl(config)
    assert "pipeline_skipped" not in run.report and run.counts["new"] == 1
    assert "pipeline_skipped" in crawl(config).report

    with sqlite3.connect(tmp_path / "index.sqlite") as db:  # a document lost from the index by other means
        db.execute("DELETE FROM docs WHERE rid = (SELECT MAX(rid) FROM docs)")
    run = crawl(config)
    assert run.code == 0 and "pipeline_skipped" not in run.report and run.counts["new"] == 1

    config = make_config(tmp_path, **settings, blacklist=[{"regex": ".*/Spam/.*"}])  # the configuration changed
    run = crawl(config)
    assert "pipeline_skipped" not in run.report and run.counts["read"] == 0

    secret.write_text("wrong-password", encoding="utf-8")  # a crawl that does not end clean
    assert crawl(config).code == 1
    secret.write_text(PASSWORD, encoding="utf-8")
    run = crawl(config)
    assert run.code == 0 and "pipeline_skipped" not in run.report and run.counts["read"] == 0
    skipped = crawl(config)
    assert "pipeline_skipped" in skipped.report and skipped.counts == run.counts  # the same report, faster


def test_unchanged_mailbox_into_a_table_needs_no_pipeline(dovecot, tmp_path, make_config, crawl):
    """The same shortcut with the index a Delta table: the state is a file beside the table's log, and holds for
    the version the clean crawl left; a commit since (a row deleted by another writer, ``beamtrawl maintain``)
    makes the next crawl run its pipeline."""
    from deltalake import DeltaTable

    client = connect(dovecot)
    fill(client)
    start = dovecot.url("imaps")
    settings = {"start": [{"url": start}], "whitelist": [{"prefix": start}], "index": {"table": "mail.delta"},
                "credentials": [{"url": start, "username": USER, "password": PASSWORD}],
                "imap": {"ca_file": str(dovecot.ca_file)}}
    config = make_config(tmp_path, **settings)
    table = str(tmp_path / "mail.delta")
    first = crawl(config)
    assert first.code == 0 and "pipeline_skipped" not in first.report, first.stderr
    documents, version = first.report["documents_in_index"], DeltaTable(table).version()

    again = crawl(config)
    assert again.code == 0 and "UIDVALIDITY" in again.report["pipeline_skipped"], again.stderr
    assert (again.counts["unchanged"], again.counts["read"], again.counts["written"]) == (documents, 0, 0)
    assert DeltaTable(table).version() == version and again.report["documents_in_index"] == documents

    client.append("INBOX", mail("Late wombat", body="A second wombat"))  # a new message
    run = crawl(config)
    assert "pipeline_skipped" not in run.report and run.counts["new"] == 1
    assert "pipeline_skipped" in crawl(config).report

    lost = DeltaTable(table)  # a document lost from the table by another writer: a new version
    lost.delete(f"url = '{lost.to_pyarrow_table(columns=['url'])['url'][0].as_py()}'")
    run = crawl(config)
    assert run.code == 0 and "pipeline_skipped" not in run.report and run.counts["new"] == 1
    assert "pipeline_skipped" in crawl(config).report

    assert beamtrawl("maintain", str(config)).returncode == 0  # compaction commits a version: the state is not its
    run = crawl(config)
    assert run.code == 0 and "pipeline_skipped" not in run.report and run.counts["read"] == 0
    skipped = crawl(config)
    assert "pipeline_skipped" in skipped.report and skipped.counts == run.counts


def test_an_index_refusing_the_crawl_state_only_costs_a_pipeline_run(dovecot, tmp_path, make_config, crawl):
    client = connect(dovecot)
    client.append("INBOX", mail("Hello", body="kiwi"))
    start = dovecot.url("imaps")
    config = make_config(tmp_path, start=[{"url": start}], whitelist=[{"prefix": start}],
                         credentials=[{"url": start, "username": USER, "password": PASSWORD}],
                         imap={"ca_file": str(dovecot.ca_file)})
    assert crawl(config).code == 0
    with sqlite3.connect(tmp_path / "index.sqlite") as db:  # as a user without the right to store it
        for action, row in (("INSERT", "NEW"), ("DELETE", "OLD")):
            db.execute(f"CREATE TRIGGER refuse_{action} BEFORE {action} ON meta WHEN {row}.key = 'crawl_state' "
                       "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    client.append("INBOX", mail("Again", body="emu"))  # the stored state no longer matches
    for _ in range(2):
        run = crawl(config)
        assert run.code == 0 and "pipeline_skipped" not in run.report, run.stderr
        assert "the index refused the crawl state" in run.stderr
    assert run.counts["unchanged"] == 2


def test_plain_imap_when_starttls_is_off(dovecot, tmp_path, make_config, crawl):
    client = connect(dovecot)
    client.append("INBOX", mail("Plain", body="okapi"))
    start = dovecot.url("imap")
    config = make_config(tmp_path, start=[{"url": start}], whitelist=[{"prefix": start}],
                         credentials=[{"url": start, "username": USER, "password": PASSWORD}],
                         imap={"starttls": False})  # no certificate to trust: this login is never TLS
    run = crawl(config)
    assert run.code == 0 and run.counts["written"] == 1, run.report.get("problems")


def _raw_mail(subject: str, parts: list[tuple[str, bytes]]) -> bytes:
    """A multipart message written byte by byte, as mail programs that use RFC 2047 in parameters
    (``name="=?UTF-8?B?…?="``) or a charset other than UTF-8 in RFC 2231 names send it."""
    lines = [b"From: Grace Hopper <grace@example.org>", b"To: team@example.org", f"Subject: {subject}".encode(),
             b"Date: Wed, 03 Jan 2024 09:00:00 +0100", b"MIME-Version: 1.0",
             b'Content-Type: multipart/mixed; boundary="XYZ"', b"", b"--XYZ",
             b"Content-Type: text/plain; charset=us-ascii", b"", b"Pictures of the lighthouse attached."]
    for headers, body in parts:
        lines += [b"--XYZ", *headers.encode().splitlines(), b"Content-Transfer-Encoding: base64", b"",
                  base64.encodebytes(body).rstrip()]
    return b"\r\n".join([*lines, b"--XYZ--", b""])


def test_attachments_carry_their_file_names(dovecot, tmp_path, make_config, crawl, search):
    """Issue 14, item 11: an attachment's file name, extension and title come from the part (RFC 2231 and
    RFC 2047 decoded), its URL keeps the section; an empty message is a document; searching needs no
    imap.ca_file. Real messages from CPython's test suite (a GIF at section 2.2 and at 2), a real PDF
    (bash's manual) under a long RFC 2231 name, and real GIFs under encoded and missing names."""
    data = f"{PY_LIB}/test/test_email/data/"
    msg_13 = debian_file(PY_TESTSUITE, data + "msg_13.txt").read_bytes()
    msg_07 = debian_file(PY_TESTSUITE, data + "msg_07.txt").read_bytes()
    gif = debian_file(PY_TESTSUITE, f"{PY_LIB}/test/imghdrdata/python.gif").read_bytes()
    bash_pdf = debian_file("bash-doc", "usr/share/doc/bash/bash.pdf").read_bytes()
    long_name = "Größe € Bericht über die Shell, mit einem sehr langen Namen, der umbrochen werden muss.pdf"
    odd = _raw_mail("Lighthouse pictures", [
        (('Content-Type: image/gif; name="=?UTF-8?B?TGV1Y2h0dHVybSBhbSBNZWVyLmdpZg==?="\r\n'
         "Content-Disposition: attachment"), gif),  # "Leuchtturm am Meer.gif", RFC 2047 in the name
        ("Content-Type: image/gif\r\nContent-Disposition: attachment; filename*=iso-8859-1''K%F6ln.GIF", gif),
        ("Content-Type: image/gif\r\nContent-Disposition: attachment", gif),  # no name at all
    ])
    client = connect(dovecot)
    uids = {}
    for key, raw in [("msg_13", msg_13), ("msg_07", msg_07), ("odd", odd),
                     ("pdf", mail("Shell manual", body="The manual, attached.",
                                  attachments=((bash_pdf, "application", "pdf", ("utf-8", "", long_name)),))),
                     ("empty", b"From: ada@example.org\r\nSubject: Nothing to say\r\n\r\n"),
                     ("headers", b"Message-ID: <42@example.org>\r\nX-Mailer: none\r\n\r\n")]:
        uids[key] = int(client.append("INBOX", raw).split(b"]")[0].split()[-1])
    validity = client.folder_status("INBOX", [b"UIDVALIDITY"])[b"UIDVALIDITY"]
    assert b"filename*0*=" in bytes(mail("x", body="x", attachments=((bash_pdf, "application", "pdf",
                                                                       ("utf-8", "", long_name)),)))
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(dovecot.ca_file.read_bytes())
    secret = tmp_path / "imap.password"
    secret.write_text(PASSWORD, encoding="utf-8")
    start = dovecot.url("imaps", "INBOX")
    config = make_config(tmp_path, start=[{"url": start}], whitelist=[{"prefix": start}],
                         credentials=[{"url": start, "username": USER, "password_file": str(secret)}],
                         imap={"ca_file": str(ca_file)})
    run = crawl(config)
    assert run.code == 0, (run.report.get("problems"), run.stderr[-2000:])

    inbox = f"{start};UIDVALIDITY={validity}"
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        rows = {url: (name, ext, mimetype, error) for url, name, ext, mimetype, error in db.execute(
            "SELECT url, filename, extension, mimetype, preparation_error FROM docs")}
    attachment = f"{inbox}/;UID={{}}/;SECTION={{}}".format
    assert rows[attachment(uids["msg_13"], "2.2")] == ("dingusfish.gif", "gif", "image/gif", "")
    assert rows[attachment(uids["msg_07"], "2")] == ("dingusfish.gif", "gif", "image/gif", "")
    assert rows[attachment(uids["odd"], "2")] == ("Leuchtturm am Meer.gif", "gif", "image/gif", "")
    assert rows[attachment(uids["odd"], "3")] == ("Köln.GIF", "gif", "image/gif", "")
    assert rows[attachment(uids["odd"], "4")] == ("part-4.gif", "gif", "image/gif", "")
    assert rows[attachment(uids["pdf"], "2")] == (long_name, "pdf", "application/pdf", "")
    empty = f"{inbox}/;UID={uids['empty']}"
    assert rows[empty][3] == "" and run.problems() == {}

    ca_file.unlink()  # searching opens no IMAP connection: the crawl's CA file need not exist
    gifs = search(config, "extension:gif")
    # copies of one picture are one hit listing the other places (issue 28, item 12)
    assert {url for hit in gifs for url in (hit["url"], *hit["locations"])} == {
        attachment(uids["msg_13"], "2.2"), attachment(uids["msg_07"], "2"), *(attachment(uids["odd"], s) for s in "234")}
    assert {hit["title"] for hit in gifs} <= {"dingusfish.gif", "Leuchtturm am Meer.gif", "Köln.GIF", "part-4.gif"}
    assert {hit["url"] for hit in search(config, "Bourne")} == {attachment(uids["pdf"], "2"),
                                                                f"{inbox}/;UID={uids['pdf']}"}
    assert [hit["url"] for hit in search(config, '"Nothing to say"')] == [empty]
    assert rows[f"{inbox}/;UID={uids['headers']}"][3] == ""
