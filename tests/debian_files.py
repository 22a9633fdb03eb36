"""Files that public Debian packages ship, for tests on real input: ``apt-get download`` the package
once, unpack it with ``dpkg-deb -x`` and keep it under ~/.cache/beamtrawl/debian/."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "beamtrawl" / "debian"
PYTHON_DOCS = "python3.11-doc"  # Python's HTML documentation (Sphinx), as Debian 12 ships it


def unpacked(package: str) -> Path:
    """The root of ``package``'s files (``<root>/usr/share/...``), fetched and unpacked on first use."""
    root = CACHE / package
    if (root / ".unpacked").exists():
        return root
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True,
                              check=False)
        debs = list(Path(work).glob("*.deb"))
        if done.returncode or not debs:
            raise RuntimeError(f"apt-get download {package} failed: {done.stderr.strip()[-300:]}")
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
    (root / ".unpacked").touch()
    return root


def python_library_docs() -> Path:
    """The folder of Python's library reference pages (subprocess.html, asyncio-subprocess.html, ...)."""
    return next((unpacked(PYTHON_DOCS) / "usr" / "share" / "doc").glob("python3*/html/library"))
