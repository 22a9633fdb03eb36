"""Real files that public packages ship, for tests that must meet input nobody on the project made.

A Debian package is fetched once with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into
``~/.cache/beamtrawl/debs``; a Maven artifact (a ``-sources.jar``: Java source that no Debian package
ships in small) is fetched once by ``mvn dependency:get`` into Maven's own repository. Later runs use
the caches.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "beamtrawl" / "debs"
MAVEN = Path.home() / ".m2" / "repository"


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


def debian_tree(package: str) -> Path:
    """The root of the Debian package ``package``'s files (``<root>/usr/share/...``), unpacked once."""
    tree = CACHE / package
    if not (tree / ".unpacked").exists():
        subprocess.run(["dpkg-deb", "-x", str(_download(package)), str(tree)], check=True)
        (tree / ".unpacked").touch()
    return tree


def debian_file(package: str, path: str) -> Path:
    """The file ``path`` (as installed, e.g. ``usr/lib/R/site-library/readxl/extdata/datasets.xlsx``)
    of the Debian package ``package``."""
    return debian_tree(package) / path


def python_library_docs() -> Path:
    """The folder of Python's library reference pages (subprocess.html, asyncio-subprocess.html, ...), as
    Debian 12's python3.11-doc ships them (Sphinx)."""
    return next((debian_tree("python3.11-doc") / "usr" / "share" / "doc").glob("python3*/html/library"))


def maven_sources_file(group: str, artifact: str, version: str, member: str) -> bytes:
    """The file ``member`` of the artifact's ``-sources.jar`` on Maven Central."""
    jar = MAVEN.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}-sources.jar")
    if not jar.exists():
        subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={group}:{artifact}:{version}:jar:sources"],
                       capture_output=True, check=True)
    with zipfile.ZipFile(jar) as sources:
        return sources.read(member)
