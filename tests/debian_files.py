"""Real files that Debian packages ship, for tests that must meet input nobody on the project made.

A package is fetched once with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into
``~/.cache/beamtrawl/debs``; later runs use the cache.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

CACHE = Path.home() / ".cache" / "beamtrawl" / "debs"


def _download(package: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    found = max(CACHE.glob(f"{package}_*.deb"), default=None)
    if found is not None:
        return found
    command = ["apt-get", "download", "-qq", package]
    if subprocess.run(command, cwd=CACHE, capture_output=True, check=False).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=True)  # no package lists yet
        subprocess.run(command, cwd=CACHE, capture_output=True, check=True)
    return max(CACHE.glob(f"{package}_*.deb"))


def package_file(package: str, path: str) -> Path:
    """The file ``path`` (as installed, e.g. ``usr/lib/R/site-library/readxl/extdata/datasets.xlsx``)
    of the Debian package ``package``."""
    tree = CACHE / package
    if not (tree / path).exists():
        subprocess.run(["dpkg-deb", "-x", str(_download(package)), str(tree)], check=True)
    return tree / path
