"""Apple iWork '05–'09 documents: Pages (``.pages``), Numbers (``.numbers``) and Keynote (``.key``) files are
ZIP packages whose document is one XML part, ``index.xml`` (Pages, Numbers) or ``index.apxl`` (Keynote),
either maybe gzip-compressed. Its text is what Tika's IWorkPackageParser writes: the character data of
paragraphs, text boxes, headers, footers, footnotes, comments and notes, and the cells of tables, whose
values Numbers and Keynote keep in attributes (a text cell's ``sf:ct/@sfa:s``, a number's ``sf:n/@sf:v``, a
formula's result ``sf:rn/@sf:v``),
with each table's and chart's name. Style sheets and binary references are left out; the document's title,
authors, keywords and comment come from its ``sf:metadata``.

iWork 2013 and later write protobuf streams (``.iwa``, Snappy-compressed) instead: those packages have no
such part, stay ZIP files and are read as their entry names, as Tika reads them too.

The part is parsed by defusedxml (no entities, no external references) and read within ``_MAX_PART`` bytes
of its decompressed size, so a packed bomb stops early.
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.xml import local_name
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

PAGES, NUMBERS, KEYNOTE = "application/vnd.apple.pages", "application/vnd.apple.numbers", "application/vnd.apple.keynote"
MIME_TYPES = (PAGES, NUMBERS, KEYNOTE)
PARTS = ("index.xml", "index.apxl", "index.xml.gz", "index.apxl.gz")
_MAX_PART = 256 * 1024 * 1024
_SF, _SFA = "http://developer.apple.com/namespaces/sf", "http://developer.apple.com/namespaces/sfa"
# the document's root element (Tika's IWorkPackageParser detects the same way)
_ROOTS = {"{http://developer.apple.com/namespaces/sl}document": PAGES,
          "{http://developer.apple.com/namespaces/ls}document": NUMBERS,
          "{http://developer.apple.com/namespaces/keynote2}presentation": KEYNOTE}
_SKIP = {"stylesheet", "styles", "anon-styles", "metadata", "data", "binary", "calc-engine", "slide-style",
         "proxied-cell-ref"}
_BLOCKS = {"p", "li", "cell", "title", "body", "notes", "text-body", "row", "tabular-model", "annotation",
           "footnote", "header", "footer", "page-start", "layout", "container-hint"}
_BREAKS = {"br", "lnbr", "pgbr", "sectbr", "tab", "crbr"}
# element (local name) -> the attribute holding its text
_VALUE_ATTRIBUTES = {"ct": f"{{{_SFA}}}s", "n": f"{{{_SF}}}v", "rn": f"{{{_SF}}}v", "tabular-model": f"{{{_SF}}}name",
                     "chart-name": f"{{{_SFA}}}string"}
_METADATA = ("title", "authors", "keywords", "comment")


def index_part(archive: zipfile.ZipFile) -> str | None:
    """The name of the package's document part, if it is an iWork '05–'09 package."""
    names = set(archive.namelist())
    return next((part for part in PARTS if part in names), None)


def _read_part(archive: zipfile.ZipFile, part: str) -> bytes:
    with archive.open(part) as member:
        stream = gzip.GzipFile(fileobj=member) if part.endswith(".gz") else member
        data = stream.read(_MAX_PART + 1)
    if len(data) > _MAX_PART:
        raise PreparationError(f"{part} is larger than {_MAX_PART} bytes once decompressed")
    return data


def iwork_type(archive: zipfile.ZipFile) -> str | None:
    """Pages, Numbers or Keynote, by the root element of the package's document part."""
    part = index_part(archive)
    if part is None:
        return None
    try:
        with archive.open(part) as member:
            head = (gzip.GzipFile(fileobj=member) if part.endswith(".gz") else member).read(4096)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile):
        return None
    return next((kind for root, kind in _ROOTS.items()
                 if f"<{_prefix(head, root)}:{root.rsplit('}', 1)[1]}".encode() in head), None)


def _prefix(head: bytes, root: str) -> str:
    """The namespace prefix the part declares for the root element's namespace (``sl``, ``ls``, ``key``)."""
    namespace = root[1:].split("}", 1)[0].encode()
    at = head.find(b'="' + namespace + b'"')
    start = head.rfind(b"xmlns:", 0, at)
    return head[start + 6:at].decode("ascii", "replace") if at > 0 and start >= 0 else "-"


def _walk(element, out: list[str]) -> None:
    """Append the text of ``element`` and its children in document order; blocks end with a newline."""
    name = local_name(element.tag)
    if name in _SKIP:
        return
    attribute = _VALUE_ATTRIBUTES.get(name)
    if attribute is not None and element.get(attribute):
        out.append(element.get(attribute) + ("\n" if name in ("tabular-model", "chart-name") else "\t"))
    if name in _BREAKS:
        out.append("\t" if name == "tab" else "\n")
    if element.text:
        out.append(element.text)
    for child in element:
        _walk(child, out)
        if child.tail:
            out.append(child.tail)
    if name in _BLOCKS:
        out.append("\n")


def _metadata(root) -> dict[str, str]:
    """title, authors, keywords, comment from ``sf:metadata`` (each a ``sf:string/@sfa:string``)."""
    found = {}
    for metadata in root.iter(f"{{{_SF}}}metadata"):
        for entry in metadata:
            strings = [s.get(f"{{{_SFA}}}string", "") for s in entry.iter(f"{{{_SF}}}string")]
            if local_name(entry.tag) in _METADATA and any(strings):
                found[local_name(entry.tag)] = ", ".join(s for s in strings if s)
    return found


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def prepare_iwork(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            part = index_part(archive)
            if part is None:
                raise PreparationError("not an iWork '05-'09 package: no index.xml or index.apxl")
            root = fromstring(_read_part(archive, part), forbid_dtd=True)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, ParseError, DefusedXmlException) as err:
        raise PreparationError(f"not a readable iWork package: {type(err).__name__}: {err}") from None
    out: list[str] = []
    try:
        _walk(root, out)
    except RecursionError:
        raise PreparationError("not a readable iWork package: its XML is nested too deep") from None
    metadata = _metadata(root)
    title = metadata.pop("title", "")
    return Prepared(title=title, content=_lines("".join(out)), metadata=" ".join(metadata.values()))
