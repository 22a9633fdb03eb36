"""EPUB by the standard library: ``META-INF/container.xml`` names the OPF package document, whose
Dublin Core metadata gives the title (dc:title) and the metadata (dc:creator, dc:subject,
dc:description, dc:language); the XHTML chapters, in spine order, go through :func:`prepare_html`
for their text and headlines. Bounded: at most ``max_bytes`` of chapter data is read in total
(reads are size-limited; declared sizes are not trusted), and container and OPF at most 1 MiB each.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from urllib.parse import unquote, urlsplit

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.html import prepare_html
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

MIME_TYPES = ("application/epub+zip",)
MiB = 1024 * 1024
_PACKAGE_LIMIT = MiB
_CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
_DC_NS = "{http://purl.org/dc/elements/1.1/}"
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html", "application/x-dtbook+xml")
_READ_ERRORS = (OSError, EOFError, RuntimeError, NotImplementedError, ValueError, KeyError, zlib.error,
                zipfile.BadZipFile)
_TAG = re.compile(r"<[^>]*>")


def _read(archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
    with archive.open(name) as entry:
        return entry.read(limit)


def _xml(archive: zipfile.ZipFile, name: str, what: str):
    data = _read(archive, name, _PACKAGE_LIMIT + 1)
    if len(data) > _PACKAGE_LIMIT:
        raise PreparationError(f"{what} larger than {_PACKAGE_LIMIT} bytes")
    try:
        return fromstring(data)
    except (ParseError, DefusedXmlException) as err:
        raise PreparationError(f"{what} is not well-formed XML: {err}"[:200]) from None


def _clean(text: str | None) -> str:
    return " ".join(_TAG.sub(" ", text or "").split())


def _dc(metadata, name: str) -> list[str]:
    if metadata is None:
        return []
    return [text for text in (_clean("".join(e.itertext())) for e in metadata.iter(_DC_NS + name)) if text]


def _package(archive: zipfile.ZipFile):
    """(OPF path, OPF root element)."""
    try:
        container = _xml(archive, "META-INF/container.xml", "container.xml")
    except KeyError:
        raise PreparationError("no META-INF/container.xml: not an EPUB") from None
    rootfiles = [e.get("full-path") for e in container.iter(_CONTAINER_NS + "rootfile")]
    path = next((p for p in rootfiles if p), None)
    if path is None:
        raise PreparationError("container.xml names no rootfile")
    try:
        return path, _xml(archive, path, "OPF")
    except KeyError:
        raise PreparationError(f"OPF {path!r} missing from the archive"[:200]) from None


def _chapters(opf, opf_path: str) -> list[str]:
    """Archive names of the spine's XHTML items, in reading order."""
    base = posixpath.dirname(opf_path)
    manifest = {}
    for item in opf.iter(_OPF_NS + "item"):
        href, media_type = item.get("href"), (item.get("media-type") or "").strip().lower()
        if item.get("id") and href and media_type in _CHAPTER_TYPES:
            path = unquote(urlsplit(href).path)
            manifest[item.get("id")] = posixpath.normpath(posixpath.join(base, path)).lstrip("/")
    names = []
    for itemref in opf.iter(_OPF_NS + "itemref"):
        name = manifest.get(itemref.get("idref"))
        if name and name not in names:
            names.append(name)
    return names


def prepare_epub(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    budget = params.get("max_bytes", 20 * MiB)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise PreparationError(f"not readable as EPUB: {err}"[:200]) from None
    with archive:
        try:
            opf_path, opf = _package(archive)
            chapters = []
            for name in _chapters(opf, opf_path):
                if budget <= 0:
                    break
                try:
                    chapter = _read(archive, name, budget)
                except KeyError:  # a spine item missing from the archive: read the others
                    continue
                budget -= len(chapter)
                chapters.append((name, chapter))
        except _READ_ERRORS as err:
            raise PreparationError(f"not readable as EPUB: {type(err).__name__}: {err}"[:200]) from None

    content, headlines, chapter_titles = [], [], []
    for name, chapter in chapters:
        try:
            prepared = prepare_html(chapter, f"{url}#{name}", "application/xhtml+xml", {})
        except PreparationError:
            continue
        if prepared.content.strip():
            content.append(prepared.content.strip())
        headlines.extend(prepared.headlines)
        chapter_titles.append(prepared.title)

    metadata = opf.find(_OPF_NS + "metadata")
    titles = _dc(metadata, "title")
    meta = [*_dc(metadata, "creator"), *_dc(metadata, "subject"), *_dc(metadata, "description"),
            *_dc(metadata, "language")]
    title = titles[0] if titles else next((t for t in chapter_titles if t), "")
    return Prepared(title=title, content="\n".join(content), headlines=headlines, metadata=" ".join(meta))
