"""Documents embedded in documents: the attachments and OLE objects of Word, Excel and PowerPoint files
(``word/embeddings``, ``xl/embeddings``, ``ppt/embeddings``, and Word's altChunk parts: HTML or MHT pasted
in), the objects of OpenDocument files (``Object 1/``: a chart, a formula, a spreadsheet; or a binary OLE
object) and the file attachments of PDFs (and so PDF portfolios). The pictures of both (``word/media``,
``ppt/media``, ``xl/media``; ``Pictures/``) are parts too: the image preparator OCRs them, within the
document's OCR allowance (``ocr.Allowance``), so a pasted scan or screenshot is found by its words.

Each is prepared by its own type as a part of its container (``…/report.docx!/word/embeddings/x.xlsx``),
through the archive preparator's one walk (:func:`archive.read_members`) and so under its bounds
(``max_entries``, ``max_bytes``; the archive preparator's configured values are the defaults here too), and
its text is inlined into the container's document after the container's own text, under a line naming it
("embedded: Workbook1.xlsx"). An OLE object is first taken out of its wrapper (:func:`unwrap`): the file
a user inserted ("Package" or ``\\x01Ole10Native`` streams, and Acrobat's ``CONTENTS``), else the OLE
storage itself, which is a legacy Office file when it has a WordDocument, Workbook or PowerPoint stream.

Why inlined and not a document of its own: a search for the text of a chart or an attached spreadsheet
should find the report that shows it, which is what a reader opens; the member would need its own URL,
freshness and deletes tied to the container's, which the crawl has for no container yet (see ``outlook``).
Nesting is bounded as for every container (``chain.MAX_NESTING``).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile

import olefile
from beamtrawl.transforms.preparators import archive
from beamtrawl.transforms.preparators.base import Prepared

_OOXML_FOLDERS = ("word/embeddings/", "xl/embeddings/", "ppt/embeddings/",
                  "word/media/", "xl/media/", "ppt/media/")  # pictures, whose text OCR reads (image)
_ODF_PICTURES = "Pictures/"
# A thumbnail drawn as a metafile holds the first page's text as text (Tika reads it); a JPEG or PNG one
# would only repeat, by OCR, text the document holds anyway.
_OOXML_THUMBNAILS = ("docProps/thumbnail.emf", "docProps/thumbnail.wmf")
_OLE_PAYLOADS = ("package", "CONTENTS")  # an OOXML file inserted whole; Acrobat's PDF


def ole10_native(stream: bytes) -> tuple[str, bytes] | None:
    """(file name, bytes) of an ``\\x01Ole10Native`` stream: size, flags, label, path, then the command
    line and the data, each after its length; None when it is not laid out so."""
    try:
        at = 6
        label_end = stream.index(b"\0", at)
        path_end = stream.index(b"\0", label_end + 1)
        at = path_end + 1 + 4
        command_length = struct.unpack_from("<I", stream, at)[0]
        at += 4 + command_length
        size = struct.unpack_from("<I", stream, at)[0]
        data = stream[at + 4:at + 4 + size]
    except (ValueError, struct.error):
        return None
    if len(data) != size:
        return None
    name = stream[6:label_end].decode("latin-1").strip()
    return name, data


def unwrap(name: str, data: bytes) -> tuple[str, bytes]:
    """The file inside an OLE object (its name, when the object names it), or the object itself."""
    if not data.startswith(olefile.MAGIC):
        return name, data
    try:
        storage = olefile.OleFileIO(data)
    except (OSError, ValueError, struct.error):
        return name, data
    try:
        streams = {"/".join(entry): entry for entry in storage.listdir()}
        native = streams.get("\x01Ole10Native")
        if native is not None:
            found = ole10_native(storage.openstream(native).read())
            if found is not None:
                inner, body = found
                return f"{name}!/{inner}" if inner else name, body
        for wanted in _OLE_PAYLOADS:
            key = next((k for k in streams if k.lower() == wanted.lower()), None)
            if key is not None:
                return name, storage.openstream(streams[key]).read()
    except (OSError, ValueError, struct.error):
        pass
    finally:
        storage.close()
    return name, data


def _params(params: dict) -> dict:
    return {**dict(archive.DEFAULTS), **params}


def ooxml_parts(package: zipfile.ZipFile):
    """(name, opener) of an OOXML package's embedded files, pictures, altChunk parts and metafile thumbnail."""
    for info in package.infolist():
        name = info.filename
        chunk = name.startswith("word/") and name.lower().endswith((".mht", ".mhtml", ".htm", ".html"))
        if (name.startswith(_OOXML_FOLDERS) or chunk or name in _OOXML_THUMBNAILS) and not info.is_dir():
            yield name, (lambda i=info: package.open(i))


# the first element a formula object's content.xml opens (an ODF one declares MathML's namespace too, on its root)
_MATH_ROOT, _SNIFF_MATHML = re.compile(rb"\A(?:\s|<\?[^>]*>|<!--.*?-->|<![^>]*>)*<(?:\w+:)?math[\s>/]", re.DOTALL), 4096


def odf_parts(package: zipfile.ZipFile):
    """(name, opener) of an OpenDocument package's objects: each ``Object N/`` folder as an OpenDocument
    of its own (its ``mimetype``-less content and styles), or a binary object file; and its pictures."""
    names = package.namelist()
    folders = sorted({n.split("/", 1)[0] for n in names if n.startswith("Object ") and "/" in n})
    for folder in folders:
        yield f"{folder}/", (lambda f=folder: io.BytesIO(_object_package(package, f)))
    for name in names:
        if (name.startswith("Object ") and "/" not in name) or (name.startswith(_ODF_PICTURES) and name[-1] != "/"):
            yield name, (lambda n=name: package.open(n))


def _object_package(package: zipfile.ZipFile, folder: str) -> bytes:
    """An ODF object's folder as a package of its own, so the ODF preparator reads it; a formula's folder as its
    MathML (``content.xml`` whose root is ``math:math``, no ODF body), which the XML preparator reads."""
    if f"{folder}/content.xml" in package.namelist():
        with package.open(f"{folder}/content.xml") as content:
            if _MATH_ROOT.search(content.read(_SNIFF_MATHML)):
                return package.read(f"{folder}/content.xml")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as copy:
        copy.writestr("mimetype", "application/vnd.oasis.opendocument.chart")
        for part in ("content.xml", "styles.xml"):
            if f"{folder}/{part}" in package.namelist():
                copy.writestr(part, package.read(f"{folder}/{part}"))
    return out.getvalue()


def inline(prepared: Prepared, parts, url: str, params: dict | None = None,
           name_of=lambda name: name) -> Prepared:
    """``prepared`` with the text of each of ``parts`` appended under "embedded: <name>", and a report
    line when a bound was reached; fields say how many parts there were."""
    found = archive.read_members(parts, url, _params(params or {}), unwrap)
    if not found.names:
        return prepared
    texts = [f"embedded: {name_of(name)}\n{text}" for name, text in found.texts]
    prepared.content = "\n\n".join(s for s in (prepared.content, *texts) if s)
    prepared.fields = {**prepared.fields, "embedded": str(len(found.names))}
    partial = found.partial("embedded documents")
    prepared.partial = "; ".join(filter(None, (prepared.partial, partial)))
    return prepared
