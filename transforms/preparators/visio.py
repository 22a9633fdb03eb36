"""Visio 2000–2010 drawings, stencils and templates (``.vsd``, ``.vss``, ``.vst``): the text of their shapes
as libvisio renders it, through its ``vsd2text`` (Debian package libvisio-tools), a helper program as
``wpd2text`` is for WordPerfect (``helpers``). libvisio is what LibreOffice reads Visio with; the binary
format's chunks are compressed and chained by pointers (POI's HDGF is a few thousand lines), and no Python
library reads it. Title and properties come from SummaryInformation, as for the other legacy Office files.
The program runs on a copy in an empty folder under the time bound. Without it this preparator fails with
the reason, the summary warns once with the count, and installing the package re-prepares the documents.
"""

from __future__ import annotations

import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.external import run_program
from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.preparators.legacy import open_ole, summary

MIME_TYPES = ("application/vnd.visio", "application/vnd.ms-visio", "application/x-visio")
DEFAULTS = (("timeout", 60.0), ("max_output_bytes", 64 * 1024**2))
VSD2TEXT = Helper("vsd2text", "libvisio-tools", "Visio drawings")
HELPERS = (VSD2TEXT,)
STREAM = "VisioDocument"


def prepare_visio(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    ole = open_ole(data)
    try:
        if not ole.exists(STREAM):
            raise PreparationError(f"no {STREAM} stream: not a Visio drawing")
        title, metadata = summary(ole)
    except (OSError, ValueError, struct.error, IndexError) as err:
        raise PreparationError(f"not readable as a Visio drawing: {type(err).__name__}: {err}"[:200]) from None
    finally:
        ole.close()
    if not VSD2TEXT.installed():
        raise PreparationError(VSD2TEXT.missing())
    command = {**params, "command": f"{VSD2TEXT.program} ${{filename}}", "check_exit_code": True}
    lines = (" ".join(line.split()) for line in run_program(data, url, command).splitlines())
    return Prepared(title=title, content="\n".join(line for line in lines if line), metadata=metadata)
