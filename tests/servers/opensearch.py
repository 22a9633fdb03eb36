"""A real single-node OpenSearch 2.19.1 with k-NN on 127.0.0.1 for tests, installed from Maven Central only.

How it works
------------
* ``ensure_installed()`` runs Maven once (``maven-dependency-plugin:copy-dependencies`` on a generated
  pom) to fetch the integration-test distribution
  ``org.opensearch.distribution.integ-test-zip:opensearch:<VERSION>:zip`` plus the jars of the modules it
  lacks, unpacks the distribution and lays those jars out as ``modules/<name>/`` folders with the
  ``plugin-descriptor.properties`` (and ``plugin-security.policy``) that the full distribution would
  have.  Result: the real ``bin/opensearch`` server with ``analysis-common`` (the english, german,
  french, italian... analyzers), ``lang-painless`` (which analysis-common extends) and ``mapper-extras``,
  plus the ``opensearch-knn`` plugin zip (``knn_vector`` fields, Lucene engine: the zip ships no native
  libraries) unpacked into ``plugins/``.  The k-NN plugin pins its server version, hence 2.19.1.
  Idempotent: a finished install carries a marker file; a half-done one is redone.
* ``running_node(workdir)`` writes a config into ``workdir/opensearch`` (``discovery.type: single-node``,
  loopback, free HTTP and transport ports, disk thresholds off, heap 512m (``heap``: a bench's node loads
  a million vectors, ``run --heap 4g``), data and logs in that folder), starts ``bin/opensearch`` in its own process group, waits for ``/_cluster/health`` to be
  yellow or green and yields ``http://127.0.0.1:PORT``; on exit it stops the whole process group.

Why this way: Maven Central serves the integ-test zip but no module zips (``analysis-common:zip`` does
not exist there), while the module jars are served; a module is only a folder of jars plus a
descriptor, so we assemble it.  This keeps the stock launcher, JVM options and security manager.

OpenSearch refuses to run as root.  As root the node runs as the system user ``beamtrawl-opensearch``
(created with ``useradd`` if missing) through ``runuser``; if that user cannot reach ``workdir`` or the
install (``/root`` and pytest's ``/tmp/pytest-of-root`` are mode 700), the node's folder lives in a
private temporary folder instead (``workdir/opensearch`` is then a symlink to it, and its logs are
copied back into ``workdir/opensearch-logs`` on exit) and the install is hard-linked into it.

Needs: Java 11..23 (found through ``OPENSEARCH_JAVA_HOME``, ``JAVA_HOME``, ``java`` on PATH or
/usr/lib/jvm; 24+ has no security manager) and ``mvn`` for the first install.

    python tests/servers/opensearch.py install [--cache-dir DIR]
    python tests/servers/opensearch.py run [--workdir DIR] [--heap 4g]   # prints the URL, runs until Ctrl-C
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.servers import refuse_fetch_in_tests
from tests.servers.jvm import free_ports

VERSION = "2.19.1"  # the k-NN plugin on Maven Central (2.19.1.0) pins this server version
KNN_VERSION = f"{VERSION}.0"
DEFAULT_CACHE = Path.home() / ".cache" / "beamtrawl" / f"opensearch-{VERSION}"
SERVICE_USER = "beamtrawl-opensearch"
MARKER = ".beamtrawl-installed"
HEAP = "512m"  # the tests' node; a bench loading a million vectors wants more (--heap)
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

# (groupId, artifactId, version, type); module jars are named artifactId-version.jar once copied.
DISTRIBUTION = ("org.opensearch.distribution.integ-test-zip", "opensearch", VERSION, "zip")
# Plugins Maven Central serves as ready plugin zips, unpacked into plugins/<name>/. The k-NN zip holds jars
# only (no faiss/nmslib native libraries), so knn_vector fields use the Lucene engine.
PLUGINS = {"opensearch-knn": ("org.opensearch.plugin", "opensearch-knn", KNN_VERSION, "zip")}
PAINLESS_POLICY = """grant {
  permission java.lang.RuntimePermission "createClassLoader";
  permission java.lang.RuntimePermission "getClassLoader";
};
"""
MODULES = {
    "lang-painless": {
        "classname": "org.opensearch.painless.PainlessPlugin",
        "description": "An easy, safe and fast scripting language for OpenSearch",
        "extends": "",
        "policy": PAINLESS_POLICY,
        "jars": [
            ("org.opensearch.plugin", "lang-painless", VERSION),
            ("org.opensearch.plugin", "opensearch-scripting-painless-spi", VERSION),
            ("org.antlr", "antlr4-runtime", "4.13.1"),
            ("org.ow2.asm", "asm", "9.7"),
            ("org.ow2.asm", "asm-analysis", "9.7"),
            ("org.ow2.asm", "asm-commons", "9.7"),
            ("org.ow2.asm", "asm-tree", "9.7"),
            ("org.ow2.asm", "asm-util", "9.7"),
        ],
    },
    "analysis-common": {
        "classname": "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "description": 'Adds "built in" analyzers to OpenSearch.',
        "extends": "lang-painless",
        "policy": None,
        "jars": [("org.opensearch.plugin", "analysis-common", VERSION)],
    },
    "mapper-extras": {
        "classname": "org.opensearch.index.mapper.MapperExtrasPlugin",
        "description": "Adds advanced field mappers",
        "extends": "",
        "policy": None,
        "jars": [("org.opensearch.plugin", "mapper-extras-client", VERSION)],
    },
}


def ensure_installed(cache_dir: str | os.PathLike | None = None) -> Path:
    """Return an OpenSearch home with the extra modules, fetching it through Maven the first time."""
    home = Path(cache_dir) if cache_dir else DEFAULT_CACHE
    if (home / MARKER).is_file():
        return home
    refuse_fetch_in_tests(f"OpenSearch {VERSION}", "python tests/servers/opensearch.py install")
    mvn = shutil.which("mvn")
    if not mvn:
        raise RuntimeError("Maven (mvn) is needed to fetch OpenSearch: apt-get install maven")
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{home.name}.partial-", dir=home.parent))
    try:
        downloads = staging / "downloads"
        coords = [DISTRIBUTION, *PLUGINS.values()] + [(*jar, "jar") for m in MODULES.values() for jar in m["jars"]]
        (staging / "pom.xml").write_text(_pom(coords))
        cmd = [mvn, "-B", "-q", "-f", str(staging / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
               "-DexcludeTransitive=true", f"-DoutputDirectory={downloads}"]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"mvn failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        dist = staging / "dist"
        _unzip(downloads / f"opensearch-{VERSION}.zip", dist)
        (root,) = list(dist.iterdir())  # the zip holds one folder, opensearch-<version>/
        for name, module in MODULES.items():
            folder = root / "modules" / name
            folder.mkdir()
            for _group, artifact, version in module["jars"]:
                shutil.copy2(downloads / f"{artifact}-{version}.jar", folder)
            (folder / "plugin-descriptor.properties").write_text(
                f"description={module['description']}\nversion={VERSION}\nname={name}\n"
                f"classname={module['classname']}\njava.version=11\nopensearch.version={VERSION}\n"
                f"custom.foldername=\nextended.plugins={module['extends']}\nhas.native.controller=false\n")
            if module["policy"]:
                (folder / "plugin-security.policy").write_text(module["policy"])
        (root / "plugins").mkdir(exist_ok=True)
        for name, (_group, artifact, version, _type) in PLUGINS.items():
            _unzip(downloads / f"{artifact}-{version}.zip", root / "plugins" / name)
        (root / MARKER).write_text(" ".join(":".join(c) for c in coords) + "\n")
        if home.exists():  # a half-done install left by an interrupted run
            shutil.rmtree(home)
        try:
            root.rename(home)
        except OSError:  # another process finished first
            if not (home / MARKER).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return home


@contextlib.contextmanager
def running_node(workdir: str | os.PathLike, *, home: str | os.PathLike | None = None,
                 startup_timeout: float = 120.0, http_port: int | None = None,
                 settings: dict[str, object] | None = None, heap: str = HEAP) -> Iterator[str]:
    """Start a single node with its files under ``workdir``; yield its base URL; stop it on exit.
    Started again with the same ``workdir`` and ``http_port``, it is the same node with the same data
    (when the service user can reach ``workdir``). ``settings`` are added to opensearch.yml; ``heap`` is the
    JVM's heap (-Xms and -Xmx, e.g. ``4g``)."""
    if not re.fullmatch(r"[1-9][0-9]*[mg]", heap):
        raise ValueError(f"heap {heap!r}: a size such as 512m or 4g")
    home = Path(home) if home else ensure_installed()
    workdir = Path(workdir).resolve()
    node = workdir / "opensearch"
    if node.is_symlink():
        node.unlink()
    node.mkdir(parents=True, exist_ok=True)
    user = _service_user() if os.geteuid() == 0 else None
    private = None  # a temporary folder used instead of workdir/opensearch when the user can't reach it
    if user and not _user_can(user, "-x", node.parent):
        shutil.rmtree(node)
        private = Path(tempfile.mkdtemp(prefix="beamtrawl-opensearch-"))
        node.symlink_to(private)
        node = private
        if not _user_can(user, "-x", node.parent):
            raise RuntimeError(f"user {user} cannot reach {node.parent}")
    if user and not _user_can(user, "-r", home / "lib"):
        if not (node / "home" / MARKER).exists():  # linked by an earlier start of this node
            _link_tree(home, node / "home")
        home = node / "home"
    free_http, transport_port = free_ports(2)
    http_port = http_port or free_http
    config = node / "config"
    for sub in ("config", "data", "logs", "tmp"):
        (node / sub).mkdir(exist_ok=True)
    # bin/opensearch-env cd's into the home, so the relative logs/ and data paths of jvm.options must go
    jvm_options = (home / "config" / "jvm.options").read_text()
    jvm_options = re.sub(r"(?<=[=:])logs/", f"{node}/logs/", jvm_options).replace("=data\n", f"={node}/data\n")
    (config / "jvm.options").write_text(jvm_options)
    shutil.copy2(home / "config" / "log4j2.properties", config)
    (config / "jvm.options.d").mkdir(exist_ok=True)
    (config / "jvm.options.d" / "heap.options").write_text(f"-Xms{heap}\n-Xmx{heap}\n-XX:-UsePerfData\n")
    (config / "opensearch.yml").write_text(
        "cluster.name: beamtrawl-test\nnode.name: node-1\nnetwork.host: 127.0.0.1\n"
        f"http.port: {http_port}\ntransport.port: {transport_port}\ndiscovery.type: single-node\n"
        f"path.data: {node / 'data'}\npath.logs: {node / 'logs'}\n"
        "cluster.routing.allocation.disk.threshold_enabled: false\n"
        + "".join(f"{key}: {value}\n" for key, value in (settings or {}).items()))
    env = {"OPENSEARCH_JAVA_HOME": str(_java_home()), "OPENSEARCH_PATH_CONF": str(config),
           "OPENSEARCH_TMPDIR": str(node / "tmp"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LANG": "C.UTF-8"}
    cmd = [str(home / "bin" / "opensearch")]
    if user:
        # not -R on node: node/home may hold hard links to the cached install, which must stay root's
        subprocess.run(["chown", f"{user}:{user}", str(node)], check=True)
        subprocess.run(["chown", "-R", f"{user}:{user}", *(str(node / d) for d in ("config", "data", "logs", "tmp"))],
                       check=True)
        cmd = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *cmd]
    console = node / "console.log"
    url = f"http://127.0.0.1:{http_port}"
    with open(console, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=node, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(url, proc, startup_timeout, node)
        _running[url] = proc
        yield url
    finally:
        _running.pop(url, None)
        _stop(proc)
        if private:
            shutil.copytree(private / "logs", workdir / "opensearch-logs", dirs_exist_ok=True)
            shutil.copy2(private / "console.log", workdir / "opensearch-logs")
            (workdir / "opensearch").unlink()
            shutil.rmtree(private, ignore_errors=True)


def _pom(coords: list[tuple[str, str, str, str]]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        f"<type>{t}</type><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
        "</exclusion></exclusions></dependency>\n" for g, a, v, t in coords)
    return ("<project><modelVersion>4.0.0</modelVersion><groupId>beamtrawl</groupId>"
            f"<artifactId>opensearch-fetch</artifactId><version>0</version><packaging>pom</packaging>"
            f"<dependencies>\n{deps}</dependencies></project>\n")


def _unzip(archive: Path, dest: Path) -> None:
    """Unpack keeping the Unix modes (zipfile alone drops the executable bits of bin/)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, dest))
            mode = info.external_attr >> 16 & 0o777
            if mode:
                path.chmod(mode)


def _java_home() -> Path:
    """A JDK with major version 11..23 (OpenSearch 2.x needs the security manager, gone in 24)."""
    candidates = [os.environ.get("OPENSEARCH_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    if java := shutil.which("java"):
        candidates.append(str(Path(os.path.realpath(java)).parent.parent))
    candidates += sorted(str(p) for p in Path("/usr/lib/jvm").glob("*"))
    for cand in filter(None, candidates):
        release = Path(cand) / "release"
        match = release.is_file() and re.search(r'JAVA_VERSION="(?:1\.)?(\d+)', release.read_text())
        if match and 11 <= int(match.group(1)) <= 23 and (Path(cand) / "bin" / "java").exists():
            return Path(cand)
    raise RuntimeError("no Java 11..23 found for OpenSearch (set OPENSEARCH_JAVA_HOME)")


def _service_user() -> str:
    if subprocess.run(["id", "-u", SERVICE_USER], check=False, capture_output=True).returncode:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", SERVICE_USER], check=True, capture_output=True)
    return SERVICE_USER


def _user_can(user: str, test_flag: str, path: Path) -> bool:
    return subprocess.run(["runuser", "-u", user, "--", "test", test_flag, str(path)], check=False).returncode == 0


def _link_tree(src: Path, dest: Path) -> None:
    def link_or_copy(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)
    shutil.copytree(src, dest, copy_function=link_or_copy, dirs_exist_ok=True)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float, node: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}/_cluster/health", timeout=2) as resp:
                if json.load(resp).get("status") in ("yellow", "green"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    code = proc.poll()
    _stop(proc)
    state = f"exited with code {code}" if code is not None else f"not ready after {timeout:.0f}s"
    raise RuntimeError(f"OpenSearch {state}; log tail:\n{_log_tail(node)}")


def _log_tail(node: Path, lines: int = 40) -> str:
    parts = []
    for log in [node / "console.log", node / "logs" / "beamtrawl-test.log"]:
        if log.is_file():
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log}\n" + "\n".join(text))
    return "\n".join(parts) or "(no log written)"


_running: dict[str, subprocess.Popen] = {}


def kill_node(url: str) -> None:
    """SIGKILL the node serving ``url`` at once, as a crash would (leaving ``running_node`` is a clean stop)."""
    proc = _running[url]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # strays left in the group after runuser returned
        os.killpg(proc.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    install = sub.add_parser("install", help="fetch and assemble OpenSearch once")
    install.add_argument("--cache-dir", default=None, help=f"default: {DEFAULT_CACHE}")
    run = sub.add_parser("run", help="start a node and keep it up until Ctrl-C")
    run.add_argument("--cache-dir", default=None, help=f"default: {DEFAULT_CACHE}")
    run.add_argument("--workdir", default=None, help="default: a new temporary folder")
    run.add_argument("--heap", default=HEAP, help=f"the JVM's heap (default {HEAP}; a bench at 100,000 documents: 4g)")
    args = parser.parse_args(argv)
    home = ensure_installed(args.cache_dir)
    if args.command == "install":
        print(home)
        return 0
    workdir = args.workdir or tempfile.mkdtemp(prefix="beamtrawl-opensearch-run-")
    started = time.monotonic()
    with running_node(workdir, home=home, heap=args.heap) as url:
        print(f"OpenSearch {VERSION} ready at {url} after {time.monotonic() - started:.1f}s "
              f"(files in {workdir}); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
