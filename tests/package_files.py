"""Real files that public packages ship, for tests that must meet input nobody on the project made.

A Debian package is fetched once with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into
``~/.cache/beamtrawl/debs``; a Maven artifact (a ``-sources.jar``: Java source that no Debian package
ships in small, or Apache Tika's own test documents in its modules' ``-tests.jar``) is fetched once by
``mvn dependency:get`` into Maven's own repository; a format library's source distribution on PyPI (its
test files) once by ``pip download --no-binary`` into ``~/.cache/beamtrawl/sdists``. Later runs use the
caches.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "beamtrawl" / "debs"
MAVEN = Path.home() / ".m2" / "repository"
SDISTS = Path.home() / ".cache" / "beamtrawl" / "sdists"
TIKA = "3.3.1"  # the Tika whose test documents the tests read (and bench/tika_compare.py runs)


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


def _maven_jar(group: str, artifact: str, version: str, classifier: str) -> Path:
    jar = MAVEN.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}-{classifier}.jar")
    if not jar.exists():
        subprocess.run(["mvn", "-q", "-B", "dependency:get",
                        f"-Dartifact={group}:{artifact}:{version}:jar:{classifier}"], capture_output=True, check=True)
    return jar


def tika_test_document(module: str, name: str) -> bytes:
    """The file ``test-documents/<name>`` of Apache Tika's ``tika-parser-<module>-module`` test jar (real
    documents Tika's developers collected: Outlook messages and folders, Office templates, …)."""
    jar = _maven_jar("org.apache.tika", f"tika-parser-{module}-module", TIKA, "tests")
    with zipfile.ZipFile(jar) as tests:
        return tests.read(f"test-documents/{name}")


def pypi_sdist_file(project: str, version: str, member: str) -> bytes:
    """The file ``member`` (a path inside the source distribution, below its top folder) of ``project``
    ``version``'s sdist on PyPI."""
    SDISTS.mkdir(parents=True, exist_ok=True)
    wanted = f"{project}-{version}.tar.gz".lower().replace("_", "-")

    def cached() -> list[Path]:
        return [f for f in SDISTS.iterdir() if f.name.lower().replace("_", "-") == wanted]

    found = cached()
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "-d", str(SDISTS), f"{project}=={version}"], capture_output=True, check=True)
        found = cached()
    with tarfile.open(found[0]) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        return sdist.extractfile(f"{top}/{member}").read()
