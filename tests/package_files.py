"""Real files that public packages ship, for tests that must meet input nobody on the project made.

Every package a test reads is named here, once: the Debian packages in DEBIAN_PACKAGES, the Maven
``-sources.jar`` artifacts (Java source that no Debian package ships in small) in MAVEN_SOURCES, Apache
Tika's own test documents (its modules' ``-tests.jar``) in TIKA_MODULES (and Tika itself, for bench/tika_compare.py), and format libraries' source
distributions on PyPI (their test files) in SDISTS. ``tests/run.sh`` fetches them all before pytest starts
(``python -m tests.package_files``): each Debian package with ``apt-get download``, unpacked with
``dpkg-deb -x`` into ``~/.cache/beamtrawl/debs``; each artifact with ``mvn dependency:get`` into Maven's own
repository; each sdist with ``pip download --no-binary`` into ``~/.cache/beamtrawl/sdists``. Later runs use
the caches. Tests never fetch: one that finds a package missing fails with the command that fetches it.

The wheels of the project's dependencies (``.[test,bench]``, what tests/run.sh installs, and setuptools and wheel to build it) are kept in
a wheelhouse named after pyproject.toml's hash, so that a test installing a fresh clone
(tests/test_front_door.py) needs no index: ``PIP_NO_INDEX=1 PIP_FIND_LINKS=<wheelhouse>``.

Python's own packages are named after the running Python (``python3.11-doc`` on Debian 12,
``python3.13-doc`` on Debian 13), since Debian ships one per Python version and their files live under
``usr/lib/python3.X``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

CACHE = Path.home() / ".cache" / "beamtrawl" / "debs"
MAVEN = Path.home() / ".m2" / "repository"
ROOT = Path(__file__).resolve().parent.parent
FETCH = "python -m tests.package_files"  # what tests/run.sh runs before pytest

PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"  # python3.11
PY_DOC, PY_STDLIB, PY_TESTSUITE = f"{PYTHON}-doc", f"lib{PYTHON}-stdlib", f"lib{PYTHON}-testsuite"
PY_LIB = f"usr/lib/{PYTHON}"  # where the last two install their files

DEBIAN_PACKAGES = (
    "apt", "bash", "bash-doc", "coreutils", "dovecot-core", "findutils", "git", "grep",
    "golang-github-pkg-errors-dev", "libreoffice-common", "librust-either-dev", "manpages", "node-abbrev", "node-tslib", "nodejs-doc",
    "polkitd", "python3-matplotlib", "r-cran-haven", "r-cran-readxl", "shared-mime-info", PY_DOC, PY_STDLIB, PY_TESTSUITE,
)
MAVEN_SOURCES = (("commons-cli", "commons-cli", "1.5.0"),)
TIKA = "3.3.1"  # the Tika whose test documents the tests read
TIKA_MODULES = ("microsoft", "pdf", "pkg", "apple", "code", "miscoffice", "webarchive", "image", "ocr")  # org.apache.tika:tika-parser-<module>-module:TIKA:jar:tests
SDIST_CACHE = Path.home() / ".cache" / "beamtrawl" / "sdists"
SDISTS = (("perceval", "1.6.1"), ("HyperKitty", "1.3.12"))


def _deb(package: str) -> Path | None:
    return max(CACHE.glob(f"{package}_*.deb"), default=None)


def debian_tree(package: str) -> Path:
    """The root of the Debian package ``package``'s files (``<root>/usr/share/...``), fetched by run.sh."""
    if package not in DEBIAN_PACKAGES:
        pytest.fail(f"{package} is not in tests/package_files.py DEBIAN_PACKAGES: add it, then run {FETCH}")
    tree = CACHE / package
    if not (tree / ".unpacked").exists():
        pytest.fail(f"the Debian package {package} is not fetched: run {FETCH} (tests/run.sh does)")
    return tree


def debian_file(package: str, path: str) -> Path:
    """The file ``path`` (as installed, e.g. ``usr/lib/R/site-library/readxl/extdata/datasets.xlsx``)
    of the Debian package ``package``."""
    return debian_tree(package) / path


def debian_deb(package: str) -> Path:
    """The ``.deb`` file of ``package`` itself, as fetched."""
    debian_tree(package)
    return _deb(package)


def python_library_docs() -> Path:
    """The folder of Python's library reference pages (subprocess.html, asyncio-subprocess.html, ...), as
    Debian's python3.X-doc ships them (Sphinx)."""
    return next((debian_tree(PY_DOC) / "usr" / "share" / "doc").glob("python3*/html/library"))


def _sources_jar(group: str, artifact: str, version: str) -> Path:
    return MAVEN.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}-sources.jar")


def maven_sources_file(group: str, artifact: str, version: str, member: str) -> bytes:
    """The file ``member`` of the artifact's ``-sources.jar`` on Maven Central, fetched by run.sh."""
    if (group, artifact, version) not in MAVEN_SOURCES:
        pytest.fail(f"{group}:{artifact}:{version} is not in tests/package_files.py MAVEN_SOURCES: add it, "
                    f"then run {FETCH}")
    jar = _sources_jar(group, artifact, version)
    if not jar.exists():
        pytest.fail(f"{jar.name} is not fetched: run {FETCH} (tests/run.sh does)")
    with zipfile.ZipFile(jar) as sources:
        return sources.read(member)


def _tika_jar(module: str) -> Path:
    artifact = f"tika-parser-{module}-module"
    return MAVEN.joinpath("org", "apache", "tika", artifact, TIKA, f"{artifact}-{TIKA}-tests.jar")


def tika_test_document(module: str, name: str) -> bytes:
    """The file ``test-documents/<name>`` of Apache Tika's ``tika-parser-<module>-module`` test jar (real
    documents Tika's developers collected: Outlook messages and folders, Office templates, …)."""
    if module not in TIKA_MODULES:
        pytest.fail(f"Tika's {module} module is not in tests/package_files.py TIKA_MODULES: add it, then run {FETCH}")
    jar = _tika_jar(module)
    if not jar.exists():
        pytest.fail(f"{jar.name} is not fetched: run {FETCH} (tests/run.sh does)")
    with zipfile.ZipFile(jar) as tests:
        return tests.read(f"test-documents/{name}")


def _sdist(project: str, version: str) -> Path | None:
    wanted = f"{project}-{version}.tar.gz".lower().replace("_", "-")
    found = [f for f in SDIST_CACHE.iterdir() if f.name.lower().replace("_", "-") == wanted] \
        if SDIST_CACHE.is_dir() else []
    return found[0] if found else None


def pypi_sdist_file(project: str, version: str, member: str) -> bytes:
    """The file ``member`` (a path inside the source distribution, below its top folder) of ``project``
    ``version``'s sdist on PyPI."""
    if (project, version) not in SDISTS:
        pytest.fail(f"{project}=={version} is not in tests/package_files.py SDISTS: add it, then run {FETCH}")
    sdist = _sdist(project, version)
    if sdist is None:
        pytest.fail(f"the source distribution of {project}=={version} is not fetched: run {FETCH} (tests/run.sh does)")
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        return archive.extractfile(f"{top}/{member}").read()


SYSTEM_PYTHON = Path("/usr/bin/python3")  # the interpreter the front-door test installs with


WHEEL_EXTRAS = "[test,bench]"  # what tests/run.sh installs, so what the wheelhouse must hold


def _wheelhouse() -> Path:
    """Named after pyproject.toml and the extras: a change to either makes a new wheelhouse (one made
    for ``[test]`` alone, under the same pyproject, lacked scrapy and failed CI)."""
    spec = (ROOT / "pyproject.toml").read_bytes() + WHEEL_EXTRAS.encode()
    digest = hashlib.sha256(spec).hexdigest()[:16]
    return Path.home() / ".cache" / "beamtrawl" / "wheels" / f"{digest}-system"


def _wheel_builder() -> str:
    """A Python like the system's to resolve the wheelhouse with: a newer one picks releases that the
    system's refuses (soupsieve 2.9 needs Python 3.11.5; Debian 12 has 3.11.2)."""
    if not SYSTEM_PYTHON.exists():
        return sys.executable
    venv = _wheelhouse().parent / "builder"
    if not (venv / "bin" / "python").exists():
        subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", str(venv)], check=True)
    return str(venv / "bin" / "python")


def wheelhouse() -> Path:
    """The folder of wheels that installs this project's ``.[test,bench]`` with no index, fetched by run.sh."""
    folder = _wheelhouse()
    if not (folder / ".complete").exists():
        pytest.fail(f"the wheelhouse {folder} is not made: run {FETCH} (tests/run.sh does)")
    return folder


def fetch() -> None:
    """Fetch and unpack what is missing (run by tests/run.sh; needs the registries, as root)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    missing = [package for package in DEBIAN_PACKAGES if _deb(package) is None]
    if missing:
        command = ["apt-get", "download", "-qq", "-o", "APT::Sandbox::User=root", *missing]
        if subprocess.run(command, cwd=CACHE, capture_output=True, check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=True)  # no package lists yet
            subprocess.run(command, cwd=CACHE, check=True)
    for package in DEBIAN_PACKAGES:
        tree = CACHE / package
        if not (tree / ".unpacked").exists():
            subprocess.run(["dpkg-deb", "-x", str(_deb(package)), str(tree)], check=True)
            (tree / ".unpacked").touch()
    for group, artifact, version in MAVEN_SOURCES:
        if not _sources_jar(group, artifact, version).exists():
            subprocess.run(["mvn", "-q", "-B", "dependency:get",
                            f"-Dartifact={group}:{artifact}:{version}:jar:sources"], check=True)
    for module in TIKA_MODULES:
        if not _tika_jar(module).exists():
            subprocess.run(["mvn", "-q", "-B", "dependency:get",
                            f"-Dartifact=org.apache.tika:tika-parser-{module}-module:{TIKA}:jar:tests"], check=True)
    SDIST_CACHE.mkdir(parents=True, exist_ok=True)
    for project, version in SDISTS:
        if _sdist(project, version) is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            "-d", str(SDIST_CACHE), f"{project}=={version}"], check=True)
    # Apache Tika itself, the peer of bench/tika_compare.py (its --tiny mode is a test)
    subprocess.run([sys.executable, str(ROOT / "bench" / "tika_compare.py"), "--fetch"], check=True)
    wheels = _wheelhouse()
    if not (wheels / ".complete").exists():
        subprocess.run([_wheel_builder(), "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                        "--wheel-dir", str(wheels), f"{ROOT}{WHEEL_EXTRAS}", "setuptools>=68", "wheel"], check=True)
        (wheels / ".complete").touch()


if __name__ == "__main__":
    fetch()
