"""Mailboxes in the mbox format (``.mbox`` files, a list archive's monthly file, Thunderbird's folders).

The messages are found as Python's ``mailbox.mbox`` finds them (a line beginning ``From `` starts a
message; ``mailbox.mboxMessage`` reads its separator line) and each is read by the mail preparator
(:func:`mail.compose`: headers, body, attachments prepared by their own type). They are inlined into
the mailbox's one document, each under its own title line, and each title is a headline; fields say how
many messages it holds. An mbox of one message is that message (its title, its From/To/Cc/Date fields).
Why inlined and not a document per message: see ``outlook`` (the same choice for .pst).
"""

from __future__ import annotations

import mailbox
import re

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.mail import prepare_mail

MIME_TYPES = ("application/mbox",)
DEFAULTS = (("max_messages", 10000),)
REVISION = 1  # part of the preparation fingerprint (base.py): 1 keeps the messages' furniture (mail REVISION 4)
_SEPARATOR = re.compile(rb"^From ", re.MULTILINE)


def messages(data: bytes):
    """(the separator line, the message's bytes) of each message, in order."""
    starts = [m.start() for m in _SEPARATOR.finditer(data)]
    for start, end in zip(starts, [*starts[1:], len(data)]):
        message = mailbox.mboxMessage(data[start:end])
        yield message.get_from(), message.as_bytes(unixfrom=False)


def join_messages(documents: list[Prepared], more: bool, what: str) -> Prepared:
    """The document of a store of messages: each message's title as a headline and a line before its text.
    ``more``: a bound stopped the reading (a report line says so)."""
    if len(documents) == 1 and not more:
        return documents[0]
    content = "\n\n".join(f"{d.title}\n{d.content}" for d in documents)
    partial = f"read only the first {len(documents)} {what}: reached max_messages" if more else ""
    return Prepared(content=content, headlines=[d.title for d in documents if d.title],
                    fields={"messages": str(len(documents))}, partial=partial,
                    furniture="\n".join(d.furniture for d in documents if d.furniture))


def prepare_mbox(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    params = {**dict(DEFAULTS), **params}
    if not data.lstrip(b"\xef\xbb\xbf").startswith(b"From "):
        raise PreparationError("not an mbox: it does not begin with a \"From \" line")
    documents, more = [], False
    for number, (_separator, message) in enumerate(messages(data), 1):
        if number > params["max_messages"]:
            more = True
            break
        try:
            documents.append(prepare_mail(message, f"{url}!/{number}", "message/rfc822", {}))
        except PreparationError:
            continue
    return join_messages(documents, more, "messages")
