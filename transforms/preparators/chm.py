"""Microsoft Compiled HTML Help (``.chm``: Windows help files, many projects' offline manuals): the pages
inside, each read by the HTML preparator, in the order of the help file's table of contents (its
``.hhc`` sitemap), then any page the contents do not list; the contents' entry names are the headlines.

The pages are LZX-compressed, which no Python library decompresses; CHMLib's ``extract_chmLib`` (Debian
package libchm-bin) unpacks the file into an empty temporary folder of its own, under a time bound
(``timeout``) and with each file it writes capped at ``max_bytes`` (the kernel's file size limit, set by util-linux's
``prlimit``), and at most ``max_bytes`` of pages are read. Without the program this preparator fails with
the reason and the summary's helper warning (``helpers``), and installing it re-prepares the files.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import lxml.html
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("application/vnd.ms-htmlhelp", "application/x-chm", "application/chm")
DEFAULTS = (("timeout", 60.0), ("max_bytes", 64 * 1024**2), ("max_pages", 5000))
EXTRACT = Helper("extract_chmLib", "libchm-bin", "help files (.chm)")
HELPERS = (EXTRACT,)
_PAGE = (".htm", ".html", ".xhtml")
_PARAM = re.compile(r"""<param\s+name\s*=\s*["']?(Name|Local)["']?\s+value\s*=\s*["']([^"']*)["']""", re.IGNORECASE)


def _extract(data: bytes, folder: str, params: dict) -> Path:
    source, out = os.path.join(folder, "help.chm"), os.path.join(folder, "pages")
    Path(source).write_bytes(data)
    try:
        argv = [EXTRACT.program, source, out]
        if shutil.which("prlimit"):  # util-linux: the kernel stops any file it writes at max_bytes
            argv = ["prlimit", f"--fsize={params['max_bytes']}", "--", *argv]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, start_new_session=True, cwd=folder)
    except OSError as err:
        raise PreparationError(f"cannot run {EXTRACT.program}: {err.strerror or err}") from None
    try:
        _out, err = process.communicate(timeout=params["timeout"])
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise PreparationError(f"{EXTRACT.program} timed out after {params['timeout']:g} s") from None
    if not os.path.isdir(out):
        first = err.decode("utf-8", "replace").strip().splitlines()[:1]
        raise PreparationError(f"not a readable help file{': ' + first[0] if first else ''}"[:200])
    return Path(out)


def _contents(root: Path) -> tuple[list[str], list[str]]:
    """(the pages the table of contents lists, in order; its entry names)."""
    sitemap = next((p for p in sorted(root.rglob("*")) if p.suffix.lower() == ".hhc" and p.is_file()), None)
    if sitemap is None:
        return [], []
    pages, names = [], []
    for kind, value in _PARAM.findall(decode_text(sitemap.read_bytes()[:16 * 1024 * 1024])):  # in its code page
        text = html.unescape(value).strip()
        if kind.lower() == "name":
            names.append(text)
        else:
            pages.append(text.split("#", 1)[0].lstrip("/").lower())
    return list(dict.fromkeys(p for p in pages if p)), names


def _page_text(body: bytes) -> str:
    """A help page's visible text. Not the HTML preparator's main-text search: a help file may hold tens of
    thousands of short pages (Tika's testChm2.chm: 32,000), all of them main text, and lxml alone is
    twenty times faster."""
    try:
        tree = lxml.html.document_fromstring(body)
    except (lxml.etree.ParserError, ValueError):
        return ""
    for element in tree.iter("script", "style", "noscript"):
        element.drop_tree()
    return "\n".join(" ".join(line.split()) for line in tree.text_content().splitlines() if line.strip())


def prepare_chm(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    params = {**dict(DEFAULTS), **params}
    if not data.startswith(b"ITSF"):
        raise PreparationError("not a compiled HTML help file")
    if not EXTRACT.installed():
        raise PreparationError(EXTRACT.missing())
    with tempfile.TemporaryDirectory(prefix="beamtrawl-chm-") as folder:
        root = _extract(data, folder, params)
        found = {str(p.relative_to(root)).lower(): p for p in sorted(root.rglob("*"))
                 if p.is_file() and p.suffix.lower() in _PAGE and not p.name.startswith(("#", "$"))}
        listed, names = _contents(root)
        order = [found[p] for p in listed if p in found] + [p for k, p in found.items() if k not in set(listed)]
        texts, budget, stops = [], params["max_bytes"], []
        for page in order:
            if len(texts) >= params["max_pages"] or budget <= 0:
                stops.append(f"max_pages ({params['max_pages']})" if budget > 0 else f"max_bytes ({params['max_bytes']})")
                break
            body = page.read_bytes()[:budget]
            budget -= len(body)
            text = _page_text(body)
            if text:
                texts.append(text)
    if not order:
        raise PreparationError("a help file with no pages")
    return Prepared(content="\n\n".join(texts), headlines=[n for n in dict.fromkeys(names) if n],
                    fields={"pages": str(len(order))},
                    partial=f"help file read partially: reached {stops[0]}" if stops else "")
