"""WordPerfect documents (versions 4.2 to X, ``.wpd``, ``.wp``, ``.wp5``…): their text as libwpd renders it,
through its ``wpd2text`` (Debian package libwpd-tools), a helper program as mandoc is for man pages
(``helpers``). libwpd is what LibreOffice reads WordPerfect with; no Python library reads the format. It
runs on a copy in an empty folder under the time bound. Without it this preparator fails with the reason,
the summary warns once with the count, and installing the package re-prepares the documents.
"""

from __future__ import annotations

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.external import run_program
from beamtrawl.transforms.preparators.helpers import Helper

MIME_TYPES = ("application/vnd.wordperfect", "application/wordperfect", "application/x-wordperfect",
              "application/wordperfect5.1")
DEFAULTS = (("timeout", 60.0), ("max_output_bytes", 64 * 1024**2))
WPD2TEXT = Helper("wpd2text", "libwpd-tools", "WordPerfect documents")
HELPERS = (WPD2TEXT,)
_MAGIC = b"\xffWPC"  # WordPerfect 5 and later; 4.2 files have no such header


def prepare_wordperfect(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if not WPD2TEXT.installed():
        raise PreparationError(WPD2TEXT.missing())
    command = {**params, "command": f"{WPD2TEXT.program} ${{filename}}", "check_exit_code": True}
    text = run_program(data, url, command)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    content = "\n".join(line for line in lines if line)
    if not content and not data.startswith(_MAGIC):
        raise PreparationError("not a WordPerfect document")
    return Prepared(content=content)
