"""XPS and OpenXPS documents (``.xps``, ``.oxps``: what Windows' "Microsoft XPS Document Writer" prints to): a ZIP
package whose fixed document sequence lists documents, each listing its pages, each page glyph runs (``Glyphs``
with a ``UnicodeString``) at positions. A page's runs are read in the order the page draws them, a line where a
run starts on another baseline or left of the one before; runs on one line are joined as they stand (a writer
puts a word's letters and the spaces between words in runs of their own), with a space where a run starts clearly
past the end of a left-to-right run before it (table columns). Title from the core properties; hyperlinks' targets
in the furniture field (searched, never shown), as they are no text of the page. Read as a ZIP
before, the index held the package's part names only.

Every part is parsed by defusedxml (no entities, no external references) and read within ``_MAX_PART`` bytes
of its decompressed size; at most ``MAX_PAGES`` pages are read, each part once (a 2 KB document naming its one
page 3,000 times in each of 3,000 documents took 47 s and 800 MB), documents' page lists and pages within
``MAX_PAGES_BYTES`` in all, and a page that cannot be read costs that page.
"""

from __future__ import annotations

import io
import posixpath
import weakref
import zipfile
import zlib
from urllib.parse import unquote

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.xml import local_name
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

XPS, OXPS = "application/vnd.ms-xpsdocument", "application/oxps"
MIME_TYPES = (XPS, OXPS)
#: the package relationship that names the fixed document sequence, by the namespace of each variant
_STARTS = {"http://schemas.microsoft.com/xps/2005/06/fixedrepresentation": XPS,
           "http://schemas.openxps.org/oxps/v1.0/fixedrepresentation": OXPS}
_MAX_PART = 64 * 1024 * 1024
_MAX_SMALL_PART = 256 * 1024  # a package's relationships or core properties: a few hundred bytes
MAX_PAGES = 10_000
MAX_PAGES_BYTES = 64 * 1024 * 1024  # of page XML in all (thousands of pages): 56 MB of empty elements took 14 s
#: what reading a damaged or hostile part raises
PART_ERRORS = (KeyError, ValueError, ParseError, DefusedXmlException, zipfile.BadZipFile, zlib.error, OSError, EOFError,
               NotImplementedError)
_LINK = "FixedPage.NavigateUri"  # a hyperlink's target, on the path or glyphs it covers
_INDEXES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # an archive's part names, lower-cased
_GAP = 0.15  # ems (about half a space) between the end of a run and the next on its line that make a space


def part_info(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    """A package part's member (names in a package are case-insensitive, and may be escaped), looked up by the
    archive's lower-cased names, made once: a scan of them for every page of 10,000 was quadratic."""
    if (index := _INDEXES.get(archive)) is None:
        index = _INDEXES[archive] = {}
        for info in reversed(archive.infolist()):
            index[info.filename.lower()] = info
    info = index.get(unquote(name).lstrip("/").lower())
    if info is None:
        raise KeyError(name)
    return info


def read_cost(archive: zipfile.ZipFile, name: str) -> int:
    """The bytes ``read_part`` parses reading a part: its size, none when it is over the bound (refused unread)."""
    size = part_info(archive, name).file_size
    return size if size <= _MAX_PART else 0


def read_part(archive: zipfile.ZipFile, name: str, limit: int = _MAX_PART):
    """A package part's parsed XML, within ``limit`` bytes."""
    info, bound = part_info(archive, name), f"{limit // 1024**2} MiB" if limit >= 1024**2 else f"{limit // 1024} KiB"
    if info.file_size > limit:  # refused unread: a member gives no more than its stated size
        raise ValueError(f"part {name} is over {bound}")
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"part {name} is over {bound}")
    return fromstring(data, forbid_dtd=True)


def _start(archive: zipfile.ZipFile) -> tuple[str, str] | None:
    """(the type, the fixed document sequence's part name) of an XPS package, or None. Every ZIP is typed by this
    (``mime.zip_container_type``): its relationships are read within ``_MAX_SMALL_PART`` bytes (a 67 KB ZIP whose
    ``_rels/.rels`` held 32 MB of empty elements took 12 s and 800 MB to type)."""
    try:
        relationships = read_part(archive, "_rels/.rels", _MAX_SMALL_PART)
    except PART_ERRORS:
        return None
    for relationship in relationships:
        kind = _STARTS.get(relationship.get("Type", ""))
        if kind and relationship.get("Target"):
            return kind, relationship.get("Target")
    return None


def xps_type(archive: zipfile.ZipFile) -> str | None:
    """The type of a ZIP that is an XPS or OpenXPS package (its package relationships say so)."""
    start = _start(archive)
    return start[0] if start else None


def _sources(archive: zipfile.ZipFile, name: str, element: str) -> list[str]:
    """The parts a sequence's ``DocumentReference``s or a document's ``PageContent``s name, resolved against it."""
    folder = posixpath.dirname("/" + unquote(name).lstrip("/"))
    return [posixpath.normpath(posixpath.join(folder, unquote(e.get("Source")))) for e in read_part(archive, name).iter()
            if local_name(e.tag) == element and e.get("Source")]


def _number(value, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _width(glyphs, text: str, em: float) -> float:
    """A run's width: the advances its ``Indices`` give (hundredths of an em), half an em for a glyph without one."""
    entries = (glyphs.get("Indices") or "").split(";", len(text))[:len(text)]  # not every entry: 50 MB of ";" took 400 MB
    advances = [_number(entry.split(",")[1], 50.0) if "," in entry else 50.0 for entry in entries]
    return (sum(advances) + 50.0 * (len(text) - len(advances))) * em / 100


def page_text(page) -> str:
    """A page's glyph runs as lines (see the module's docstring)."""
    lines: list[list[str]] = []
    last_x = last_y = end = None
    for glyphs in (e for e in page.iter() if local_name(e.tag) == "Glyphs"):
        text = glyphs.get("UnicodeString") or ""
        text = text.removeprefix("{}")  # "{}" escapes a string beginning with "{"
        if not text:
            continue
        x, y = _number(glyphs.get("OriginX")), _number(glyphs.get("OriginY"))
        em = _number(glyphs.get("FontRenderingEmSize"), 12.0)
        left_to_right = _number(glyphs.get("BidiLevel")) % 2 == 0  # not int(): "1e999" lost the whole document
        if last_y is None or abs(y - last_y) > 1.0 or (left_to_right and end is not None and x < last_x):
            lines.append([])
        elif end is not None and x > end + _GAP * em and not (lines[-1][-1][-1:].isspace() or text[:1].isspace()):
            lines[-1].append(" ")
        lines[-1].append(text)
        last_x, last_y, end = x, y, (x + _width(glyphs, text, em) if left_to_right else None)
    return "\n".join(" ".join("".join(line).split()) for line in lines if "".join(line).strip())


def core_title(archive: zipfile.ZipFile) -> str:
    """The title of a package's core properties (``docProps/core.xml``), or ""."""
    try:
        core = read_part(archive, "docProps/core.xml", _MAX_SMALL_PART)
    except PART_ERRORS:
        return ""
    return next((" ".join((e.text or "").split()) for e in core.iter() if local_name(e.tag) == "title"), "")


def read_pages(archive: zipfile.ZipFile, parts: list[str], kind: str, budget: int, partial: list[str]):
    """Each of ``parts`` (pages, a drawing's masters) parsed, as (part, root): at most ``MAX_PAGES``, within
    ``budget`` bytes of XML in all, a part that cannot be read costing that part. Once all are read, ``partial``
    says how many could not be (first) and where the bounds stopped the reading."""
    lost = []
    for number, part in enumerate(parts[:MAX_PAGES]):
        try:
            budget -= read_cost(archive, part)
            if budget < 0:
                partial.append(f"read the first {number} {kind} ({MAX_PAGES_BYTES // 1024**2} MiB of {kind})")
                break
            root = read_part(archive, part)
        except PART_ERRORS as err:
            lost.append(f"{part}: {type(err).__name__}: {err}")
            continue
        yield part, root
    if lost:
        partial.insert(0, f"{len(lost)} of {len(parts)} {kind} unreadable ({lost[0]})")
    if len(parts) > MAX_PAGES:
        partial.append(f"read the first {MAX_PAGES} of more {kind}")


def prepare_xps(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        start = _start(archive)
        if start is None:
            raise PreparationError("not an XPS document: no fixed document sequence")
        pages: dict[str, None] = {}
        budget, partial = MAX_PAGES_BYTES, []  # the documents' page lists count too: each can be as large as a page
        for number, document in enumerate(dict.fromkeys(_sources(archive, start[1], "DocumentReference"))):
            if (cost := read_cost(archive, document)) > budget:
                partial.append(f"read the first {number} documents ({MAX_PAGES_BYTES // 1024**2} MiB of pages)")
                break
            budget -= cost
            pages.update(dict.fromkeys(_sources(archive, document, "PageContent")))
            if len(pages) > MAX_PAGES:
                break
    except PART_ERRORS as err:
        raise PreparationError(f"not readable as XPS: {type(err).__name__}: {err}"[:200]) from None
    texts, links = [], {}
    for _name, page in read_pages(archive, list(pages), "pages", budget, partial):
        texts.append(page_text(page))
        links.update(dict.fromkeys(e.get(_LINK) for e in page.iter() if e.get(_LINK)))
    return Prepared(title=core_title(archive), content="\n".join(t for t in texts if t), partial="; ".join(partial)[:300],
                    furniture="\n".join(links))
