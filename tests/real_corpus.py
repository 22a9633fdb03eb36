"""The real-world corpus: files that public Debian packages ship, fetched once and cached.

Nothing in it is made by the project: each package is fetched with ``apt-get download`` and unpacked
with ``dpkg-deb -x`` into ``~/.cache/beamtrawl/real-corpus/tree/PACKAGE/``, exactly as the archive
holds it (dangling symlinks, binaries, compressed man pages and all). A marker file written last says
the tree is complete, so a second run costs a stat; a half-made tree (an interrupted fetch) is made
again. Versions are not pinned — security updates replace the ones the archive serves — so the test's
assertions use phrases that stay put across a package's updates.

Fetched by ``tests/run.sh`` before pytest starts (``python -m tests.real_corpus``, which prints where the
tree is); the test's fixture only reads it, and fails with that command when the tree is not there. Needs
``apt-get`` and ``dpkg-deb``; runs ``apt-get update`` when a package is not found in the lists (as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.package_files import PY_DOC, PY_TESTSUITE

# package → what it brings to the corpus
PACKAGES = {
    PY_DOC: "Python's HTML documentation (Sphinx pages, their .txt sources, .gz changelogs)",
    PY_TESTSUITE: "CPython's test suite: .py, testtar.tar with Latin-1 names, xml, wav, "
                               "aiff, odd encodings, zip, decTest",
    "bash-doc": "PDF manuals, HTML, example scripts, .gz changelogs",
    "coreutils": "man pages (.gz roff), NEWS.gz, ELF binaries, .mo catalogues",
    "groff": "roff sources, macro packages, fonts, HTML manual, .gz man pages",
    "r-cran-readxl": "sample spreadsheets: .xlsx whose sheets declare A1 as their dimension, .xls",
    "r-cran-openxlsx": "sample .xlsx workbooks (comments, pivot tables, named regions, inline strings)",
    "r-cran-officer": "sample .docx/.pptx/.xlsx, templates, test documents shipped as .docx.gz",
    "python3-docx": "python-docx's default template .docx and its Python sources",
    "libreoffice-common": "LibreOffice templates (.ott/.otp/.ots), XML dialogs, Basic libraries, sounds",
}

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "beamtrawl" / "real-corpus"
TREE = CACHE / "tree"
_MARKER = CACHE / "complete.txt"


class CorpusUnavailable(RuntimeError):
    """The machine cannot fetch Debian packages (no apt-get, no network)."""


FETCH = "python -m tests.real_corpus"  # what tests/run.sh runs before pytest


def corpus(fetch: bool = False) -> Path:
    """The unpacked tree of every package in PACKAGES; fetched first if ``fetch``, else it must be there."""
    if _MARKER.exists() and _MARKER.read_text(encoding="utf-8").split("\n")[0] == _manifest():
        return TREE
    if not fetch:
        raise CorpusUnavailable(f"the real-world corpus is not fetched: run {FETCH} (tests/run.sh does)")
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise CorpusUnavailable("the real-world corpus needs apt-get and dpkg-deb (Debian or Ubuntu)")
    debs = _download(CACHE / "debs")
    shutil.rmtree(TREE, ignore_errors=True)
    for package, deb in debs.items():
        (TREE / package).mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(TREE / package)], check=True)
    versions = "\n".join(deb.name for deb in debs.values())
    _MARKER.write_text(f"{_manifest()}\n{versions}\n", encoding="utf-8")
    return TREE


def _manifest() -> str:
    return " ".join(sorted(PACKAGES))


def _download(folder: Path) -> dict[str, Path]:
    """apt-get download every package into ``folder`` (after apt-get update if one is not found)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    command = ["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", *PACKAGES]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, check=False)
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CorpusUnavailable(f"apt-get download failed: {done.stderr.strip()[-500:]}")
    return {package: next(folder.glob(f"{package}_*.deb")) for package in PACKAGES}


if __name__ == "__main__":
    try:
        print(corpus(fetch=True))
    except CorpusUnavailable as error:
        sys.exit(f"real-world corpus: {error}")
