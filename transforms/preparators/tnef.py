"""TNEF (``winmail.dat``, application/vnd.ms-tnef): what Outlook sends in place of a MIME message's body and
attachments when it writes "rich text". Read with tnefparse (pure Python). The message becomes a document as
every mail does (:func:`mail.compose`): its subject (the conversation topic when the subject attribute is
missing, as Exchange leaves it), the body (plain, else HTML, else the compressed RTF, each prepared by its
own type) and each attachment prepared by its own type under the file's URL plus ``!/<name>``, as Tika's
TNEFParser hands them to its embedded-document extractor.
"""

from __future__ import annotations

from beamtrawl.transforms.preparators import mail
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_nested
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("application/vnd.ms-tnef",)
MAGIC = b"\x78\x9f\x3e\x22"  # 0x223E9F78, little-endian
_TOPIC = 0x0070  # MAPI PR_CONVERSATION_TOPIC
_SUBJECT = 0x0037  # MAPI PR_SUBJECT


def _text(value) -> str:
    if isinstance(value, bytes):
        return decode_text(value.rstrip(b"\x00"))
    return str(value or "")


def _subject(tnef) -> str:
    """The subject attribute, else the MAPI subject, else the conversation topic."""
    subject = next((o.data for o in tnef.objects if o.name == tnef.ATTSUBJECT), b"")
    props = {p.name: p.data for p in tnef.mapiprops}
    return (_text(subject) or _text(props.get(_SUBJECT)) or _text(props.get(_TOPIC))).strip()


def _body(tnef, url: str) -> list[str]:
    """The body's text: plain, else HTML, else RTF, the latter two prepared by their preparators."""
    if tnef.body:
        return [_text(tnef.body).strip()]
    for raw, name in ((tnef.htmlbody, "body.html"), (tnef.rtfbody, "body.rtf")):
        if raw:
            prepared = prepare_nested(raw if isinstance(raw, bytes) else raw.encode("utf-8"), f"{url}!/{name}")
            return [prepared.content.strip()] if prepared is not None else []
    return []


def prepare_tnef(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    import tnefparse

    if not data.startswith(MAGIC):
        raise PreparationError("not a TNEF file: no TNEF signature")
    try:
        tnef = tnefparse.TNEF(data)
        attachments = [{"name": a.long_filename() or _text(a.name), "mimetype": "", "size": len(a.data or b""),
                        "body": a.data or b""} for a in tnef.attachments]
    except Exception as err:  # noqa: BLE001 - tnefparse raises whatever a damaged file makes its parsing hit
        raise PreparationError(f"not a readable TNEF file: {type(err).__name__}: {err}") from None
    return mail.compose({"Subject": _subject(tnef)}, _body(tnef, url), attachments, url)
