"""OneNote sections (``.one``, OneNote 2007 to Microsoft 365: the MS-ONESTORE revision store), read by
onenote-converter (a Rust parser with Python bindings, a wheel: no helper program). Each page is rendered
to Markdown by the library and that to text by the Markdown preparator, so a page's title is a heading:
the first page's title is the document's title, every page title a headline. Pictures' alternative text
(OneNote keeps the text it recognised in them there) stays; the pictures themselves are not read.

The parser is native code: a panic in it on a damaged file is this document's failure, as any other
preparator's exception is, and the isolated preparing process bounds its time and memory.
"""

from __future__ import annotations

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.markdown import prepare_markdown

MIME_TYPES = ("application/onenote", "application/msonenote")
# The revision store's file-type GUID {7B5C52E4-D88C-4DA7-AEB1-5378D02996D3}, little-endian, opens a section.
SECTION_MAGIC = bytes.fromhex("e4525c7b8cd8a74daeb15378d02996d3")


def prepare_onenote(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    import onenote  # onenote-converter, loaded on the first section

    if not data.startswith(SECTION_MAGIC):
        raise PreparationError("not a OneNote section: no revision store header")
    try:
        section = onenote.read_section(data)
        markdown = section.markdown()
        pages = section.page_count
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 - the parser's panics are BaseExceptions (pyo3)
        raise PreparationError(f"not readable as a OneNote section: {type(err).__name__}: {err}"[:200]) from None
    prepared = prepare_markdown(markdown.encode("utf-8"), url, "text/markdown", {})
    prepared.fields = {**prepared.fields, "pages": str(pages)}
    return prepared
