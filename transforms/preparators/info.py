"""GNU Info manuals (``/usr/share/info/coreutils.info.gz`` once decompressed, and the ``-1``, ``-2`` parts a
large manual is split into): makeinfo's output is text whose nodes are separated by the control character
0x1F, so libmagic calls it data and it went unread. :func:`info_type` recognises it by makeinfo's first line.

Each node's header line (``File: groff.info,  Node: Top,  Next: Introduction,  Up: (dir)``) becomes the node's
name, a headline; its text is kept as written. The tag table and the indirect table (node names with byte
offsets, for the Info reader) are not text: of them only the node names are kept, as headlines, so that the
main file of a split manual, which holds nothing else, is found by its chapters' names. The title is the Top
node's underlined heading ("GNU troff"). The charset is the one the file's ``Local Variables: coding:`` names
(groff's is ISO-8859-1), else found as any text's. Index entries' markers (``\\0\\b[index\\0\\b]``) are dropped.
"""

from __future__ import annotations

import codecs
import itertools
import re

from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.text import decode_text, heading_title

MIME_TYPES = ("text/x-info",)
_START = re.compile(rb"This is [^\n]{1,200}(?:produced by makeinfo|Info file)")
_SEPARATOR = "\x1f"
MAX_NODES = 50_000  # Python's manual, among the largest, has 5,309
_NODE = re.compile(r"File: [^,\n]*,\s+Node: ([^,\n\t]+)")
_TABLE_NODE = re.compile(r"^(?:Node|Ref): ([^\x7f\n]+)\x7f", re.MULTILINE)
_CODING = re.compile(rb"\x1f\nLocal Variables:\ncoding: ([\w.:-]{1,40})\n")
_MARKER = re.compile(r"\x00\x08\[[^\x00\n]{0,20}\x00\x08\]")  # makeinfo's index and image markers


def info_type(data: bytes) -> str | None:
    """text/x-info for makeinfo's output (its first line says so, and a node separator follows), else None."""
    return MIME_TYPES[0] if _START.match(data) and b"\x1f\n" in data[:64 * 1024] else None


def _decode(data: bytes) -> str:
    """By the declared coding when it reads makeinfo's ASCII first line as ASCII (not "utf-16", "rot13")."""
    declared = _CODING.search(data[-4096:])
    if declared is not None:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii")).name
            if data[:8].decode(codec) == "This is ":
                return data.decode(codec, errors="replace")
        except (LookupError, UnicodeError):  # no such codec, or none for text ("rot13", "undefined")
            pass
    return decode_text(data)


def prepare_info(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = _MARKER.sub("", _decode(data))
    lines, headlines, title = [], [], ""
    parts = text.split(_SEPARATOR, MAX_NODES)
    parts[-1] = parts[-1].replace(_SEPARATOR, "\n")  # past MAX_NODES: the rest, as one
    for number, part in enumerate(parts):
        part = part.strip("\n")
        header, _newline, body = part.partition("\n")
        node = _NODE.match(header)
        if number == 0:  # the preamble: makeinfo's line, the manual's summary and copying terms
            lines.append(part)
        elif node is not None:
            name = node.group(1).strip()
            headlines.append(name)
            lines += [name, body.strip("\n")]
            if name == "Top" and not title:
                title = heading_title(body)
        elif header.startswith("Tag Table:"):  # its names count against MAX_NODES as the nodes' do
            names = itertools.islice(_TABLE_NODE.finditer(body), max(0, MAX_NODES - len(headlines)) + 1)
            headlines += [name.group(1).strip() for name in names]
    partial = (f"read {MAX_NODES:,} nodes as nodes, the rest as one" if len(parts) > MAX_NODES
               else f"kept the first {MAX_NODES:,} node names of its tables" if len(headlines) > MAX_NODES else "")
    headlines = list(dict.fromkeys(h for h in headlines[:MAX_NODES] if h != "Top"))
    return Prepared(title=title, content="\n".join(lines), headlines=headlines, partial=partial)
