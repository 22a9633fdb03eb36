"""ZIP entries in the methods Python's zipfile cannot decompress: implode (PKZIP 1.x, ``moby.zip`` of
Tika's test documents), shrink and reduce, and Deflate64. 7-Zip reads them all: ``7z e -so`` writes one
entry to a pipe, of which at most ``max_bytes`` are read before the program is ended; it runs on a copy of
the archive in an empty folder, with wildcards off (``-spd``: an entry's name is only a name), under
coreutils' ``timeout``. 7-Zip is a helper program (Debian package p7zip-full, ``helpers``): without it such
entries are listed by name only, a report line says why, and installing it re-prepares the archives.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
import zipfile

from beamtrawl.transforms.preparators.helpers import Helper

SEVEN_ZIP = Helper("7z", "p7zip-full", "archives with ZIP entries in legacy methods (implode)")
HELPERS = (SEVEN_ZIP,)
READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
TIMEOUT = 60  # seconds for one entry


class Missing(Exception):
    """An entry needs 7-Zip and it is not installed."""


def needs_seven_zip(info: zipfile.ZipInfo) -> bool:
    return info.compress_type not in READABLE and not info.is_dir()


class Extractor:
    """One archive's entries, each by a run of a program on one copy of the archive (``archive`` in an
    empty folder): at most ``max_bytes`` of its standard output are kept. 7z for ZIP here; others say
    their program and command line by ``helper`` and :meth:`argv`."""

    helper = SEVEN_ZIP

    def __init__(self, data: bytes, max_bytes: int):
        self.data, self.max_bytes, self.folder = data, max_bytes, None

    def ensure_file(self) -> None:
        """The archive's copy, written once."""
        if self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="beamtrawl-")
            with open(os.path.join(self.folder.name, "archive"), "wb") as handle:
                handle.write(self.data)

    def argv(self, name: str) -> list[str]:
        return [self.helper.program, "e", "-so", "-spd", "-bd", "-y", "-p", "archive", "--", name]

    def open(self, name: str) -> io.BytesIO:
        if not self.helper.installed():
            raise Missing(self.helper.missing())
        self.ensure_file()
        argv = [shutil.which("timeout") or "timeout", "-s", "KILL", str(TIMEOUT), *self.argv(name)]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, cwd=self.folder.name, start_new_session=True)
        try:
            body = process.stdout.read(self.max_bytes)
        finally:
            process.kill()
            process.wait()
            process.stdout.close()
        return io.BytesIO(body)

    def close(self) -> None:
        if self.folder is not None:
            self.folder.cleanup()
