"""Apple's binary property lists (``bplist00``: preferences, Info.plist, iOS backups' manifests) and Safari's
``.webarchive`` files, which are such a list.

A property list's text is its keys and values as an outline: a ``key: value`` line each, a dictionary's or
array's key on a line of its own with its members indented under it (each key written once, not its whole
path on every line), dates as XML property lists write them (``2010-02-06T03:05:30Z``); data values are
left out (a webarchive's aside), their key kept. A webarchive
holds a captured page: its main resource (usually HTML) is prepared by its own type, as are its
subframes' main resources; its title is the page's; its subresources (style sheets, images, scripts) are
named by URL only.

The binary format is read here rather than with ``plistlib``: plistlib refuses a whole list over one
"ASCII" string holding other bytes (Tika's test list has UTF-8 there), and this reader decodes such a
string as UTF-8 instead. Objects are visited at most once on each path (a list that refers to itself is
not followed) and to a bounded depth.
"""

from __future__ import annotations

import datetime
import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_part
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.preparators.text import decode_text

MAGIC = b"bplist00"
BPLIST, WEBARCHIVE = "application/x-bplist", "application/x-webarchive"
MIME_TYPES = (BPLIST, WEBARCHIVE)
REVISION = 1  # part of the preparation fingerprint (base.py): 1 writes the list as an outline, dates as ISO 8601
_MAX_DEPTH = 64
_EPOCH = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)


class _Reader:
    """Objects of a binary property list by number (offset table, references of ``ref_size`` bytes)."""

    def __init__(self, data: bytes):
        if not data.startswith(MAGIC) or len(data) < 40:
            raise PreparationError("not a binary property list")
        offset_size, self.ref_size, count, self.top, table = struct.unpack(">6xBBQQQ", data[-32:])
        if not (offset_size and self.ref_size) or table + count * offset_size > len(data) - 32:
            raise PreparationError("not a binary property list: its trailer is damaged")
        self.data = data
        self.offsets = [int.from_bytes(data[table + i * offset_size:table + (i + 1) * offset_size], "big")
                        for i in range(count)]

    def _int(self, start: int, size: int) -> int:
        return int.from_bytes(self.data[start:start + size], "big", signed=size >= 8)

    def _length(self, low: int, start: int) -> tuple[int, int]:
        """(the object's element count, where its contents begin)."""
        if low != 0xF:
            return low, start
        size = 1 << (self.data[start] & 0xF)
        return self._int(start + 1, size), start + 1 + size

    def _refs(self, start: int, count: int) -> list[int]:
        return [self._int(start + i * self.ref_size, self.ref_size) for i in range(count)]

    def read(self, number: int, path: frozenset = frozenset()):
        if number in path or len(path) > _MAX_DEPTH or number >= len(self.offsets):
            return None
        path = path | {number}
        start = self.offsets[number]
        marker = self.data[start]
        high, low = marker >> 4, marker & 0xF
        if high == 0x0:
            return {0x8: False, 0x9: True}.get(low)
        if high == 0x1:
            return self._int(start + 1, 1 << low)
        if high == 0x2:
            return struct.unpack(">f" if low == 2 else ">d", self.data[start + 1:start + 1 + (1 << low)])[0]
        if high == 0x3:
            seconds = struct.unpack(">d", self.data[start + 1:start + 9])[0]
            try:
                return _EPOCH + datetime.timedelta(seconds=seconds)
            except OverflowError:
                return None
        length, begin = self._length(low, start + 1)
        if high == 0x4:
            return bytes(self.data[begin:begin + length])
        if high == 0x5:  # ASCII by the format; UTF-8 in the wild
            return self.data[begin:begin + length].decode("utf-8", "replace")
        if high == 0x6:
            return self.data[begin:begin + 2 * length].decode("utf-16-be", "replace")
        if high in (0xA, 0xC):
            return [self.read(ref, path) for ref in self._refs(begin, length)]
        if high == 0xD:
            keys, values = self._refs(begin, length), self._refs(begin + length * self.ref_size, length)
            return {str(self.read(k, path)): self.read(v, path) for k, v in zip(keys, values)}
        return None  # UIDs (keyed archives' references) and unknown markers hold no text

    def root(self):
        return self.read(self.top)


def parse(data: bytes):
    """The property list's root object."""
    try:
        return _Reader(data).root()
    except (struct.error, IndexError, ValueError) as err:
        raise PreparationError(f"not a readable binary property list: {err}") from None


def lines(value, key: str = "", depth: int = 0) -> list[str]:
    """The outline of ``value``: ``key: value`` lines of its strings, numbers and dates, a container's key
    on a line of its own above its members, indented a step deeper."""
    indent = "  " * depth
    if isinstance(value, (dict, list)):
        inner = depth + 1 if key else depth
        items = value.items() if isinstance(value, dict) else (("", item) for item in value)
        members = [line for k, v in items for line in lines(v, k, inner)]
        return [f"{indent}{key}", *members] if key else members
    if value is None or isinstance(value, bytes):
        return [f"{indent}{key}"] if key and value is not None else []
    if isinstance(value, datetime.datetime):
        value = value.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = " ".join(str(value).split())
    return [f"{indent}{key}: {text}" if key else f"{indent}{text}"] if text else []


def _resource_text(resource: dict, url: str) -> Prepared:
    data = resource.get("WebResourceData")
    if not isinstance(data, bytes):
        return Prepared()
    part_url = f"{url}!/{resource.get('WebResourceURL') or 'main'}"
    prepared = prepare_part(data, part_url)[0]
    if prepared is None:  # no preparators reachable (tested on its own): the declared type decides
        declared = str(resource.get("WebResourceMIMEType") or "")
        if declared == "text/html":
            prepared = prepare_html(data, part_url, declared, {})
        else:
            prepared = Prepared(content=decode_text(data) if declared.startswith("text/") else "")
    return prepared


def _webarchive(root: dict, url: str) -> Prepared:
    main = root.get("WebMainResource") if isinstance(root.get("WebMainResource"), dict) else {}
    page = _resource_text(main, url)
    frames = [_resource_text(frame.get("WebMainResource") or {}, url)
              for frame in root.get("WebSubframeArchives") or [] if isinstance(frame, dict)]
    subresources = [str(r.get("WebResourceURL")) for r in root.get("WebSubresources") or []
                    if isinstance(r, dict) and r.get("WebResourceURL")]
    content = "\n\n".join(filter(None, [page.content, *(f.content for f in frames), "\n".join(subresources)]))
    return Prepared(title=page.title, content=content, summary=page.summary, headlines=page.headlines,
                    fields={"page_url": str(main.get("WebResourceURL") or "")})


def prepare_plist(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    root = parse(data)
    if isinstance(root, dict) and isinstance(root.get("WebMainResource"), dict):
        return _webarchive(root, url)
    return Prepared(content="\n".join(lines(root)))


def plist_type(data: bytes, name: str) -> str | None:
    """The type of bytes that begin as a binary property list: a webarchive when it holds a main resource."""
    if not data.startswith(MAGIC):
        return None
    return WEBARCHIVE if name.lower().endswith(".webarchive") or b"WebMainResource" in data else BPLIST
