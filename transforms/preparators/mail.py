"""E-mail (message/rfc822), read with the standard library's ``email`` package.

Title as in regain: "<subject> from <sender>". Content: a header block, then the text parts in their
declared charsets (HTML-only alternatives converted to text), then per attachment an "attachment: <name>"
line followed by its text, prepared with the same configured preparators as any document (a PDF by the
PDF preparator, a ZIP by the archive preparator, an attached mail by this one, to a bounded depth).
Of a multipart/alternative the plain text is read; the lines of its HTML alternative that hold words the
plain text lacks (a mail client shows the HTML) go to the ``furniture`` field, searched but never shown.
``fields["attachments"]`` lists the attachments (name, type, size) as JSON; ``from``, ``to``, ``cc`` and
``date`` are fields too. :func:`compose` makes the document of a message read from any store (``outlook``
for .msg and .pst, ``mbox``), so every message reads alike.
"""

from __future__ import annotations

import contextlib
import email
import email.header
import email.policy
import json
import re
from email.message import EmailMessage, Message

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_nested
from beamtrawl.transforms.preparators.html import prepare_html, visible_lines
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("message/rfc822",)
REVISION = 4  # part of the preparation fingerprint (base.py): 3 reads delivery reports' status parts and a
# multipart body whose boundary is lost; 1 makes a message of headers alone a document,
# 2 stores From, To, Cc and Date as fields; 4 keeps an HTML alternative's own words in the furniture field
HEADERS = ("Subject", "From", "To", "Cc", "Date")
_FIELDS = ("From", "To", "Cc", "Date")
_ADDRESSES = ("From", "To", "Cc")


def _raw(msg: EmailMessage, name: str) -> str:
    """A header's raw text: 8-bit bytes in their sniffed charset, encoded words decoded where valid."""
    raw = next((str(v) for k, v in msg.raw_items() if k.lower() == name.lower()), "")
    raw = decode_text(raw.encode("ascii", "surrogateescape"))
    with contextlib.suppress(Exception):
        raw = str(email.header.make_header(email.header.decode_header(raw)))
    return raw


def header(msg: EmailMessage, name: str) -> str:
    """The decoded header; its raw text where the header is too malformed for the parser (an address
    it cannot parse, raw 8-bit bytes, or an exception)."""
    try:
        header = msg.get(name)
        value = str(header or "")
        if header is not None and ((header.defects and name in _ADDRESSES) or "\ufffd" in value):
            value = _raw(msg, name)
    except Exception:  # noqa: BLE001 - email's header parser raises assorted errors on malformed input
        value = _raw(msg, name)
    return " ".join(value.split())


def _text_of(part: EmailMessage) -> str:
    payload = part.get_payload(decode=True) or b""
    charset = part.get_content_charset()
    if charset:
        try:
            return payload.decode(charset)
        except (LookupError, UnicodeDecodeError):  # unknown or wrong charset: sniff it
            pass
    return decode_text(payload)


_WORD = re.compile(r"\w+")
_ENCODED_LINE = re.compile(r"^[A-Za-z0-9+/=]{40,}\r?\n", re.MULTILINE)  # base64 of a part whose boundary is lost
# A delivery or read report's machine-readable parts (RFC 3464, 8098, 6522): header blocks saying which
# recipient failed and why ("Action: failed", "Diagnostic-Code: smtp; 550 …"), and the headers of the
# message the report is about. They are text; as attachments they gave nothing (their payload is no bytes).
_REPORT_PARTS = ("message/delivery-status", "message/disposition-notification", "text/rfc822-headers")


def _report_text(part: EmailMessage) -> str:
    payload = part.get_payload()
    if isinstance(payload, list):  # the email package parses a status part into header blocks
        return "\n".join(block.as_string().strip() for block in payload if isinstance(block, Message))
    return _text_of(part)


def _html_text(part: EmailMessage, url: str) -> str:
    try:
        return prepare_html(_text_of(part).encode("utf-8"), url, "text/html", {}).content
    except PreparationError:
        return ""


def _visible_lines(part: EmailMessage) -> list[str]:
    try:
        return visible_lines(_text_of(part).encode("utf-8"))
    except PreparationError:
        return []


def _walk(part: EmailMessage, url: str, texts: list[str], attachments: list[dict],
          alternatives: list[EmailMessage]) -> None:
    """``alternatives``: the HTML parts set aside for a plain one (``furniture``)."""
    ctype = part.get_content_type()
    if part.get_content_maintype() == "multipart":
        children = list(part.iter_parts())
        if not children and isinstance(part.get_payload(), str):  # its boundary is lost (a damaged header)
            texts.append(_ENCODED_LINE.sub("", part.get_payload()).strip())  # the parts' text, markers and all
            return
        if part.get_content_subtype() == "alternative" and any(c.get_content_type() == "text/plain"
                                                                for c in children):
            alternatives += [c for c in children if c.get_content_type() == "text/html"]
            children = [c for c in children if c.get_content_type() != "text/html"]
        for child in children:
            _walk(child, url, texts, attachments, alternatives)
    elif ctype in ("text/plain", "text/html") and not part.is_attachment() and not part.get_filename():
        texts.append((_html_text(part, url) if ctype == "text/html" else _text_of(part)).strip())
    elif ctype in _REPORT_PARTS:
        texts.append(_report_text(part).strip())
    else:
        if ctype == "message/rfc822":
            inner = part.get_payload()
            body = inner[0].as_bytes() if isinstance(inner, list) and inner else b""
        else:
            body = part.get_payload(decode=True) or b""
        attachments.append({"name": part.get_filename() or "", "mimetype": ctype, "size": len(body),
                            "body": body})


def _furniture(alternatives: list[EmailMessage], texts: list[str]) -> str:
    """The lines of the HTML alternatives that hold a word the texts read lack, each once."""
    if not alternatives:
        return ""
    known = {w.lower() for text in texts for w in _WORD.findall(text)}
    lines = (line for part in alternatives for line in _visible_lines(part))
    return "\n".join(dict.fromkeys(line for line in lines
                                    if any(w.lower() not in known for w in _WORD.findall(line))))


def compose(headers: dict[str, str], texts: list[str], attachments: list[dict], url: str) -> Prepared:
    """One message as a document, whatever it was stored in (an .eml, an Outlook .msg, a message of an
    mbox or a PST): ``headers`` by the names of ``HEADERS``, the body's texts, the attachments (name,
    mimetype, size, body), each prepared by its own type. Title "<subject> from <sender>" as in regain;
    From, To, Cc and Date are also fields of their own (``from``, ``to``, ``cc``, ``date``)."""
    subject, sender = headers.get("Subject", ""), headers.get("From", "")
    block = "\n".join(f"{name}: {headers[name]}" for name in HEADERS if headers.get(name))
    parts = []
    for number, attachment in enumerate(attachments, 1):
        name = attachment["name"] or f"part{number}"
        if "text" in attachment:  # read already (a message attached to an Outlook message)
            text = attachment.pop("text").strip()
        else:
            prepared = prepare_nested(attachment.pop("body"), f"{url}!/{name}")
            text = prepared.content.strip() if prepared is not None else ""
        if attachment["name"] or text:
            parts.append(f"attachment: {name}" + (f"\n{text}" if text else ""))
    content = "\n\n".join(s for s in (block, *texts, "\n".join(parts)) if s)
    fields = {name.lower(): headers[name] for name in _FIELDS if headers.get(name)}
    return Prepared(title=f"{subject} from {sender}" if sender else subject, content=content,
                    fields={**fields, "attachments": json.dumps(attachments, ensure_ascii=False)})


def prepare_mail(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    headers = {name: header(msg, name) for name in HEADERS}
    if not msg.keys() and not msg.get_payload():  # headers of any kind and no body still make a message
        raise PreparationError("no mail headers or body")
    texts: list[str] = []
    attachments: list[dict] = []
    alternatives: list[EmailMessage] = []
    _walk(msg, url, texts, attachments, alternatives)
    prepared = compose(headers, texts, attachments, url)
    prepared.furniture = _furniture(alternatives, texts)
    return prepared
