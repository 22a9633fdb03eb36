"""Outlook's files: a message saved as ``.msg`` (read by extract-msg) and personal folders, ``.pst`` and
``.ost`` (read by libpff-python, the Python binding of libyal's libpff).

Each message is read as the mail preparator reads an .eml (:func:`mail.compose`): subject as title
("<subject> from <sender>"), From/To/Cc/Date as fields and as a header block, the body in plain text,
else its HTML converted to text, else its RTF; attachments prepared by their own type (an attached
message by this same reader, to a bounded depth). Contacts, tasks, notes and appointments saved as .msg
are read alike: subject and body.

A folder file's messages are inlined into its one document, each under a title line that names its
folder, each title a headline (``mbox.join_messages``), up to ``max_messages``. Why not a document per
message: beamtrawl's containers (archives, compressed files, mail with attachments) are read into the
container's document today; a member's own URL (``…/mail.pst!/Inbox/12``) would need its freshness and
deletes to follow its container's, which the crawl does not do yet. A search for a phrase of any message
finds the container, whose text shows the message. The folders' names, empty folders' too ("Deleted Items",
"Spam"), are the file's metadata, a path a line, as an archive's member names are its text.
"""

from __future__ import annotations

import codecs
import email.policy
import email.utils
import io
import logging
from email.parser import BytesHeaderParser

from beamtrawl.transforms.preparators import mail
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.preparators.mbox import join_messages
from beamtrawl.transforms.preparators.rtf import prepare_rtf
from beamtrawl.transforms.preparators.text import decode_text

REVISION = 2  # part of the preparation fingerprint (base.py): 1 names a folder file's folders in its metadata, 2 a
# message's code page from PR_INTERNET_CPID
MSG_TYPES = ("application/vnd.ms-outlook",)
PST_TYPES = ("application/vnd.ms-outlook-pst",)
MIME_TYPES = (*MSG_TYPES, *PST_TYPES)
DEFAULTS = (("max_messages", 10000),)
_MAX_DEPTH = 3  # messages attached to messages attached to messages; deeper ones are named only
logging.getLogger("extract_msg").setLevel(logging.CRITICAL)  # it logs every property it cannot decode


def _try(read, default=None):
    """A property of a message, or ``default``: the libraries raise all sorts of errors on odd messages
    (an RTF body in a code page Python lacks, a broken property stream), and one bad property must not
    cost the rest."""
    try:
        value = read()
    except Exception:  # noqa: BLE001 - see above
        return default
    return default if value is None else value


def _get(thing, name: str, default=None):
    """``thing.name`` (a library's property, computed on access), or ``default`` whatever it raises."""
    return _try(lambda: getattr(thing, name), default)


def _text(value) -> str:
    if isinstance(value, bytes):
        value = decode_text(value)
    return " ".join(str(value or "").replace("\x00", " ").split())


def body_text(plain, html, rtf, url: str) -> str:
    """The body as Tika reads it: plain text, else HTML converted to text, else RTF converted to text."""
    if isinstance(plain, bytes):
        plain = decode_text(plain)
    if plain and plain.strip():
        return plain.replace("\x00", "").strip()
    if html:
        html = html if isinstance(html, bytes) else html.encode("utf-8")
        text = _try(lambda: prepare_html(html, url, "text/html", {}).content, "")
        if text.strip():
            return text.strip()
    if rtf:
        return _try(lambda: prepare_rtf(rtf, url, "text/rtf", {}).content, "").strip()
    return ""


def _msg_document(message, url: str, depth: int) -> Prepared:
    date = _get(message, "date")
    headers = {"Subject": _text(_get(message, "subject", "")), "From": _text(_get(message, "sender", "")),
               "To": _text(_get(message, "to", "")), "Cc": _text(_get(message, "cc", "")),
               "Date": email.utils.format_datetime(date) if hasattr(date, "tzinfo") else _text(date or "")}
    body = body_text(_get(message, "body"), _get(message, "htmlBody"), _get(message, "rtfBody"), url)
    attachments = []
    for number, attachment in enumerate(_get(message, "attachments", []), 1):
        name = _text(_get(attachment, "longFilename") or _get(attachment, "shortFilename") or "")
        data = _get(attachment, "data")
        if isinstance(data, bytes):
            attachments.append({"name": name, "mimetype": _text(_get(attachment, "mimetype", "")),
                                "size": len(data), "body": data})
        elif data is not None and depth < _MAX_DEPTH:  # an attached message
            inner = _msg_document(data, f"{url}!/{name or number}", depth + 1)
            attachments.append({"name": name or inner.title, "mimetype": MSG_TYPES[0], "size": len(inner.content),
                                "text": f"{inner.title}\n{inner.content}"})
    return mail.compose(headers, [body] if body else [], attachments, url)


def _code_page(message, data: bytes) -> str | None:
    """The code page of a message whose strings are not Unicode and that lacks PR_MESSAGE_CODEPAGE, from its
    PR_INTERNET_CPID, as Outlook and Tika take it: extract-msg then assumes ISO-8859-15, which turned a Big5
    message (Traditional Chinese, code page 950) into Latin letters. Not a code page its strings are not in: a
    CPID of US-ASCII, UTF-8 or UTF-7 on Latin-1 bytes made the message unreadable, UTF-16 made it empty."""
    if _try(lambda: message.areStringsUnicode, True) or "3FFD0003" in message.props:
        return None
    from extract_msg.encoding import lookupCodePage

    encoding = _try(lambda: lookupCodePage(message.getPropertyVal("3FDE0003")))
    if encoding is None or codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        return None  # 8-bit strings are never in these
    return encoding if _try(lambda: _strings_decode(data, encoding), False) else None


def _strings_decode(data: bytes, encoding: str) -> bool:
    """Whether the 8-bit strings (``…001E`` streams) of a message, its recipients' and attachments' (not those of
    an attached message, which has its own code page), are all in ``encoding``; raises if one is not."""
    import olefile

    with olefile.OleFileIO(data) as ole:
        for path in ole.listdir():
            if path[-1].upper().endswith("001E") and not any(p.upper().startswith("__SUBSTG1.0_3701") for p in path):
                ole.openstream(path).read().decode(encoding)
    return True


def prepare_msg(data: bytes, url: str) -> Prepared:
    import extract_msg

    try:
        message = extract_msg.openMsg(io.BytesIO(data), delayAttachments=False, strict=False)
        if encoding := _code_page(message, data):
            _try(message.close)
            message = extract_msg.openMsg(io.BytesIO(data), delayAttachments=False, strict=False,
                                          overrideEncoding=encoding)
    except Exception as err:  # noqa: BLE001 - extract-msg raises its own and olefile's errors
        raise PreparationError(f"not readable as an Outlook message: {type(err).__name__}: {err}"[:200]) from None
    try:
        return _msg_document(message, url, 0)
    finally:
        _try(message.close)


def _pst_headers(message) -> dict[str, str]:
    """Headers from the message's internet headers when it came by mail, else from its properties."""
    raw = _get(message, "transport_headers", "")
    parsed = BytesHeaderParser(policy=email.policy.default).parsebytes(
        raw.encode("utf-8", "replace") if isinstance(raw, str) else raw) if raw else None
    headers = {name: mail.header(parsed, name) for name in mail.HEADERS} if parsed is not None else {}
    headers["Subject"] = headers.get("Subject") or _text(_get(message, "subject", ""))
    headers["From"] = headers.get("From") or _text(_get(message, "sender_name", ""))
    if not headers.get("Date"):
        date = _get(message, "delivery_time") or _get(message, "client_submit_time")
        headers["Date"] = email.utils.format_datetime(date) if hasattr(date, "tzinfo") else ""
    return headers


def _pst_document(message, url: str) -> Prepared:
    body = body_text(_get(message, "plain_text_body"), _get(message, "html_body"),
                     _get(message, "rtf_body"), url)
    attachments = []
    for number in range(_get(message, "number_of_attachments", 0)):
        attachment = _try(lambda n=number: message.get_attachment(n))
        size = _get(attachment, "size", 0)
        data = _try(lambda a=attachment, s=size: a.read_buffer(s), b"") if size else b""
        name = _text(_get(attachment, "name", ""))
        attachments.append({"name": name, "mimetype": "", "size": len(data), "body": data})
    return mail.compose(_pst_headers(message), [body] if body else [], attachments, url)


def _folder_messages(folder, path: str, folders: list[str]):
    """(folder path, message) of the folder and every folder below it; each folder's path is added to
    ``folders``."""
    if path:
        folders.append(path.lstrip("/"))
    for number in range(_get(folder, "number_of_sub_messages", 0)):
        message = _try(lambda n=number: folder.get_sub_message(n))
        if message is not None:
            yield path, number, message
    for number in range(_get(folder, "number_of_sub_folders", 0)):
        sub = _try(lambda n=number: folder.get_sub_folder(n))
        if sub is not None:
            yield from _folder_messages(sub, f"{path}/{_text(_get(sub, 'name', ''))}", folders)


def prepare_pst(data: bytes, url: str, params: dict) -> Prepared:
    import pypff

    store = pypff.file()
    try:
        store.open_file_object(io.BytesIO(data))
        root = store.get_root_folder()
    except (OSError, ValueError) as err:
        raise PreparationError(f"not readable as Outlook personal folders: {err}"[:200]) from None
    documents, folders, more = [], [], False
    try:
        for path, number, message in _folder_messages(root, "", folders):
            if len(documents) >= params["max_messages"]:
                more = True
                break
            document = _pst_document(message, f"{url}!{path}/{number + 1}")
            documents.append(Prepared(title=f"{path.lstrip('/')}: {document.title}".strip(": "),
                                      content=document.content))
    finally:
        _try(store.close)
    joined = join_messages(documents, more, "messages")
    joined.title = ""  # a folder file's title is its name, whatever it holds
    joined.metadata = "\n".join(folders)
    return joined


def prepare_outlook(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    params = {**dict(DEFAULTS), **params}
    if data.startswith(b"!BDN"):
        return prepare_pst(data, url, params)
    return prepare_msg(data, url)
