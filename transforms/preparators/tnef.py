"""TNEF (``winmail.dat``, application/vnd.ms-tnef): what Outlook sends in place of a MIME message's body and
attachments when it writes "rich text". Read with tnefparse (pure Python). The message becomes a document as
every mail does (:func:`mail.compose`): its subject (the conversation topic when the subject attribute is
missing, as Exchange leaves it), the body (plain, else HTML, else the compressed RTF, each prepared by its
own type) and each attachment prepared by its own type under the file's URL plus ``!/<name>``, as Tika's
TNEFParser hands them to its embedded-document extractor.
"""

from __future__ import annotations

import struct

from beamtrawl.transforms.preparators import mail
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_nested
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("application/vnd.ms-tnef",)
MAGIC = b"\x78\x9f\x3e\x22"  # 0x223E9F78, little-endian
_TOPIC = 0x0070  # MAPI PR_CONVERSATION_TOPIC
_SUBJECT = 0x0037  # MAPI PR_SUBJECT
_PROPERTY_LISTS = (0x9003, 0x9005)  # attMAPIProps, attAttachment: a count of properties, then the properties
#: tnefparse copies the rest of the file for every attribute: attributes × bytes is what parsing costs
_MAX_COPIED = 20_000_000_000  # about a second


def _text(value) -> str:
    if isinstance(value, bytes):
        return decode_text(value.rstrip(b"\x00"))
    return str(value or "")


def _subject(tnef) -> str:
    """The subject attribute, else the MAPI subject, else the conversation topic."""
    subject = next((o.data for o in tnef.objects if o.name == tnef.ATTSUBJECT), b"")
    props = {p.name: p.data for p in tnef.mapiprops}
    return (_text(subject) or _text(props.get(_SUBJECT)) or _text(props.get(_TOPIC))).strip()


def _checked(data: bytes) -> None:
    """Refuse what would keep tnefparse busy for hours: a property count beyond the bytes that follow (it
    loops on past the end, a warning per step), or so many attributes that its copying is quadratic."""
    offset, attributes = 6, 0  # signature, key
    while offset + 9 <= len(data):
        name, length = struct.unpack_from("<II", data, offset + 1)
        if name & 0xFFFF in _PROPERTY_LISTS and length >= 4 and offset + 13 <= len(data):
            count = struct.unpack_from("<I", data, offset + 9)[0]
            if count * 4 > length:
                raise PreparationError(f"not a readable TNEF file: {count:,} properties in {length:,} bytes")
        offset, attributes = offset + 9 + length + 2, attributes + 1
        if attributes * len(data) > _MAX_COPIED:
            raise PreparationError(f"not read: more than {attributes:,} TNEF attributes in {len(data):,} bytes")


def _rtf_body(tnef) -> bytes:
    """The compressed RTF body, or nothing when it does not decompress (its attachments still count)."""
    try:
        return tnef.rtfbody or b""
    except Exception:  # noqa: BLE001 - tnefparse's own ("CRC is invalid!")
        return b""


def _body(tnef, url: str) -> list[str]:
    """The body's text: plain, else HTML, else RTF, the latter two prepared by their preparators."""
    if tnef.body:
        return [_text(tnef.body).strip()]
    for raw, name in ((tnef.htmlbody, "body.html"), (_rtf_body(tnef).rstrip(b"\x00"), "body.rtf")):
        if raw:
            prepared = prepare_nested(raw if isinstance(raw, bytes) else raw.encode("utf-8"), f"{url}!/{name}")
            return [prepared.content.strip()] if prepared is not None else []
    return []


def prepare_tnef(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    import tnefparse

    if not data.startswith(MAGIC):
        raise PreparationError("not a TNEF file: no TNEF signature")
    _checked(data)
    try:
        tnef = tnefparse.TNEF(data)
        attachments = [{"name": a.long_filename() or _text(a.name), "mimetype": "", "size": len(a.data or b""),
                        "body": a.data or b""} for a in tnef.attachments]
    except Exception as err:  # noqa: BLE001 - tnefparse raises whatever a damaged file makes its parsing hit
        raise PreparationError(f"not a readable TNEF file: {type(err).__name__}: {err}") from None
    return mail.compose({"Subject": _subject(tnef)}, _body(tnef, url), attachments, url)
