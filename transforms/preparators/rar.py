"""RAR archives (RAR 4 and 5), whose compression no Python library and not Debian's 7-Zip decompresses:
libarchive's ``bsdtar`` (Debian package libarchive-tools, a helper program as mandoc is) lists the entries
and writes each one to a pipe, on a copy of the archive in an empty folder under a time bound, at most
``max_bytes`` read (``zip_methods.Extractor``). A name is given to bsdtar with its pattern characters
escaped, so it matches only itself. Without bsdtar the archive fails with the reason and the summary's
helper warning, and installing it re-prepares the archives. An encrypted archive lists what bsdtar can.
"""

from __future__ import annotations

import re
import subprocess

from beamtrawl.transforms.preparators.base import PreparationError
from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.preparators.zip_methods import TIMEOUT, Extractor

MAGIC = b"Rar!\x1a\x07"
BSDTAR = Helper("bsdtar", "libarchive-tools", "RAR archives")
HELPERS = (BSDTAR,)
_PATTERN = re.compile(r"([\\*?\[])")


class RarExtractor(Extractor):
    helper = BSDTAR

    def argv(self, name: str) -> list[str]:
        return [BSDTAR.program, "-x", "-O", "-f", "archive", "--", _PATTERN.sub(r"\\\1", name)]


def _listing(extractor: RarExtractor) -> list[str]:
    if not BSDTAR.installed():
        raise PreparationError(BSDTAR.missing())
    extractor.ensure_file()
    try:
        done = subprocess.run([BSDTAR.program, "-t", "-f", "archive"], cwd=extractor.folder.name, capture_output=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise PreparationError(f"bsdtar timed out after {TIMEOUT} s listing the RAR archive") from None
    names = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.returncode != 0 and not names:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise PreparationError(f"not a readable RAR archive{': ' + first[0] if first else ''}"[:200])
    return names


def rar_entries(data: bytes, max_bytes: int):
    """(name, opener or None for a folder) of each entry, in archive order."""
    extractor = RarExtractor(data, max_bytes)
    try:
        for name in _listing(extractor):
            yield name, None if name.endswith("/") else (lambda n=name: extractor.open(n))
    finally:
        extractor.close()
