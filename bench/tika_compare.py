"""Peer benchmark: beamtrawl against Apache Tika 3.3.1 on the same files — what each reads, and how fast.

Run from the repository root (beamtrawl installed, a JDK and Maven on PATH)::

    python bench/tika_compare.py --fetch          # once: Tika's jars from Maven Central, the peer compiled
    python bench/tika_compare.py [--corpus real|tika|both] [--workers 2] [--tiny]

The peer is Tika's ``AutoDetectParser`` with ``BodyContentHandler(-1)`` and embedded documents recursed
(``bench/TikaPeer.java``, ten lines of main): tika-app is not on Maven Central, so
``org.apache.tika:tika-parsers-standard-package`` (the pom, without ``com.github.junrar:junrar``) and
``tika-core`` are resolved by ``mvn dependency:copy-dependencies`` into ``~/.cache/beamtrawl/tika-peer``.
It runs with as many threads as beamtrawl has workers.

OCR is the same on both sides, so that neither pays for tesseract or gains its words alone: off by default
(Tika's ``TesseractOCRConfig.setSkipOcr(true)``, beamtrawl's ``ocr.enabled: false``), on for both with
``--ocr`` (tesseract installed: Tika's TesseractOCRParser and beamtrawl's ocr step each run it on images and
scanned pages). The output says which.

Corpora (nothing generated): ``real`` is the tree of tests/real_corpus.py (what ten Debian packages
ship), ``tika`` every test document of the Tika modules tests/package_files.py fetches (TIKA_MODULES:
Office, PDF, archives, Apple, code, miscellaneous office, web archives); ``both`` (the default) is the two.
beamtrawl crawls the files into a fresh embedded index (``beamtrawl crawl``, DirectRunner with
``--workers`` workers): it also indexes, which Tika does not.

Printed, per MIME type (beamtrawl's; Tika's where beamtrawl has no document): files; files each side
read (at least 50 characters of text); the median share of Tika's distinct words found in beamtrawl's
text, over the files Tika read; files only one side read. Words are ``\\w+`` lowercased on both sides;
beamtrawl's text is every column a search looks in but the file name and URL (title, content, headlines,
metadata, furniture). A word Tika glued from several of beamtrawl's words (its handler writes no space
between some elements: a property list's key and value ``ArtistJimi``, an index heading and its entry
``HEADING11ENTRY11``) counts as found when beamtrawl's text holds those words next to each other, in that
order (``glued``; up to ``GLUE`` words). Before branch h24n such words counted as missing. Then the totals and the targets of issue 24
(beamtrawl reads ≥ 97 % of the files Tika reads, median share ≥ 0.95 for every type, ≥ 1.5× Tika's
documents per CPU-second) and the documents per CPU-second of each (the CPU time of the process and its
children: the JVM, or the crawl's driver and workers), with their ratio.

``--tiny`` runs a handful of Tika's test documents, for the test suite (tests/test_tika_compare.py).
Exit code 0 when measured (targets may be missed), 1 when a side did not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from beamtrawl.transforms.sources.file import path_to_url

TIKA = "3.3.1"
PEER = Path.home() / ".cache" / "beamtrawl" / "tika-peer"
READ_CHARS = 50  # a side "read" a file when its text has at least this many characters
_WORD = re.compile(r"\w+")
GLUE = 8  # Tika's glued words are counted as found when beamtrawl has their parts, up to this many, adjacent
_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>beamtrawl.bench</groupId><artifactId>tika-peer</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.tika</groupId><artifactId>tika-core</artifactId><version>{TIKA}</version></dependency>
    <dependency><groupId>org.apache.tika</groupId><artifactId>tika-parsers-standard-package</artifactId>
      <version>{TIKA}</version>
      <exclusions><exclusion><groupId>com.github.junrar</groupId><artifactId>junrar</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
"""
TINY = (("microsoft", "testWORD_embeded.docx"), ("microsoft", "testEXCEL.xlsx"), ("pdf", "testPDF.pdf"),
        ("pkg", "test-documents.7z"), ("webarchive", "testWARC_multiple.warc"), ("code", "AutoDetectParser.class"))


def _classes() -> Path:
    return PEER / "classes"


def fetched() -> bool:
    return (_classes() / "TikaPeer.class").exists() and (PEER / "lib" / ".complete").exists()


def fetch() -> None:
    """Resolve Tika's jars into PEER/lib and compile the peer (needs Maven Central; run once)."""
    PEER.mkdir(parents=True, exist_ok=True)
    if not (PEER / "lib" / ".complete").exists():
        (PEER / "pom.xml").write_text(_POM, encoding="utf-8")
        subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DoutputDirectory=lib",
                        "-DincludeScope=runtime"], cwd=PEER, check=True)
        (PEER / "lib" / ".complete").touch()
    compile_peer()


def compile_peer() -> None:
    """Compile bench/TikaPeer.java against the fetched jars when the class is missing or older."""
    source = REPO / "bench" / "TikaPeer.java"
    target = _classes() / "TikaPeer.class"
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        _classes().mkdir(exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", str(PEER / "lib" / "*"), "-d", str(_classes()), str(source)],
                       check=True)


def _tika_documents(folder: Path, only=None) -> None:
    """Tika's test documents (of the modules tests/package_files.py fetches), one folder per module."""
    from tests.package_files import TIKA_MODULES, _tika_jar

    for module in TIKA_MODULES:
        with zipfile.ZipFile(_tika_jar(module)) as jar:
            for name in jar.namelist():
                if not name.startswith("test-documents/") or name.endswith("/"):
                    continue
                if only is not None and (module, name.split("/", 1)[1]) not in only:
                    continue
                target = folder / module / name.split("/", 1)[1]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(jar.read(name))


def _files(roots: list[Path]) -> list[Path]:
    """Regular files under the roots (beamtrawl skips symbolic links; so does the peer here)."""
    found = []
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                path = Path(folder, name)
                if path.is_file() and not path.is_symlink():
                    found.append(path)
    return found


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tika(files: list[Path], threads: int, work: Path, deadline: int,
             ocr: bool) -> tuple[dict[str, tuple[str, str]], float]:
    """({path: (Tika's type, its text)}, CPU seconds)."""
    listing, out = work / "tika-files.txt", work / "tika-out"
    out.mkdir()
    listing.write_text("\n".join(str(f) for f in files) + "\n", encoding="utf-8")
    classpath = f"{_classes()}{os.pathsep}{PEER / 'lib' / '*'}"
    before = _children_cpu()
    subprocess.run(["java", "-Xmx2g", "-Dlog4j2.level=OFF", "-cp", classpath, "TikaPeer", str(threads), str(listing),
                    str(out), str(deadline), "ocr" if ocr else "no-ocr"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    cpu = _children_cpu() - before
    results = {}
    for number, path in enumerate(files):
        text_file = out / f"{number}.txt"
        if text_file.exists():
            kind = (out / f"{number}.type").read_text(encoding="utf-8", errors="replace").split(";")[0].strip()
            results[str(path)] = (kind, text_file.read_text(encoding="utf-8", errors="replace"))
    return results, cpu


def run_beamtrawl(roots: list[Path], workers: int, work: Path,
                  ocr: bool) -> tuple[dict[str, tuple[str, str]], float, int]:
    """({path: (MIME type, the text a search finds)}, CPU seconds, the crawl's exit code). The text is every
    searchable column of the document's own text (searched: its file name and URL are not), so page furniture,
    searched at a lower weight, counts as the content does."""
    index = work / "index.sqlite"
    settings = {"start": [{"url": path_to_url(str(r)), "parse": True, "index": False} for r in roots],
                "whitelist": [{"prefix": path_to_url(str(r))} for r in roots],
                "index": {"path": str(index)}, "max_failed_ratio": 1.0, "ocr": {"enabled": ocr}}
    config = work / "crawl.yaml"
    config.write_text(json.dumps(settings), encoding="utf-8")
    before = _children_cpu()
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config),
                           f"--direct_num_workers={workers}"], cwd=REPO, capture_output=True, text=True, check=False)
    cpu = _children_cpu() - before
    if not index.exists():
        print(done.stderr[-2000:])
        return {}, cpu, done.returncode
    from beamtrawl.transforms.index.sqlite_parts import COLUMNS, all_parts, fts

    searched = [c for c in COLUMNS if c not in ("filename", "location")]

    results = {}
    by_url = {path_to_url(str(p)): str(p) for p in _files(roots)}
    with sqlite3.connect(index) as db:
        for part in all_parts(db):
            rows = db.execute(f"SELECT d.url, d.mimetype, {', '.join('f.' + c for c in searched)} "
                              f"FROM docs d JOIN {fts(part)} f ON f.rowid = d.rid")
            for url, mimetype, *texts in rows:
                if url in by_url:
                    results[by_url[url]] = (mimetype, "\n".join(t or "" for t in texts))
    return results, cpu, done.returncode


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def glued(text: str, wanted: set[str]) -> set[str]:
    """The words of ``wanted`` that ``text`` holds as a run of up to GLUE adjacent words written together.

    Tika's handler writes no space between some elements, so it glues a key to its value (a property list's
    ``ArtistJimi``), a cell to the next (``Qtr2nd``) or a heading to the entry under it (``HEADING11ENTRY11``);
    beamtrawl keeps them apart, and a search finds both words. Such a word counts as found when beamtrawl's
    text has its parts next to each other, in that order, and nothing else does."""
    if not wanted:
        return set()
    prefixes = {w[:i] for w in wanted for i in range(1, len(w) + 1)}
    tokens = [w.lower() for w in _WORD.findall(text)]
    found = set()
    for start in range(len(tokens)):
        run = tokens[start]
        if run not in prefixes:
            continue
        for token in tokens[start + 1:start + GLUE]:
            run += token
            if run not in prefixes:
                break
            if run in wanted:
                found.add(run)
    return found


def share(tika_text: str, ours: str) -> float:
    """The share of Tika's distinct words that beamtrawl's text holds, as words or glued (``glued``)."""
    theirs = words(tika_text)
    if not theirs:
        return 1.0
    missing = theirs - words(ours)
    return (len(theirs) - len(missing) + len(glued(ours, missing))) / len(theirs)


def read(text: str) -> bool:
    return len(text.strip()) >= READ_CHARS


def compare(files: list[Path], tika: dict, ours: dict) -> list[dict]:
    """One row per MIME type, most files first."""
    rows: dict[str, dict] = defaultdict(lambda: {"files": 0, "tika": 0, "ours": 0, "shares": [], "only_tika": 0,
                                                 "only_ours": 0, "low": [], "only_tika_files": []})
    for path in map(str, files):
        tika_type, tika_text = tika.get(path, ("", ""))
        our_type, our_text = ours.get(path, ("", ""))
        row = rows[our_type or tika_type or "-"]
        row["files"] += 1
        tika_read, our_read = read(tika_text), read(our_text)
        row["tika"] += tika_read
        row["ours"] += our_read
        row["only_tika"] += tika_read and not our_read
        if tika_read and not our_read:
            row["only_tika_files"].append(path)
        row["only_ours"] += our_read and not tika_read
        if tika_read:
            value = share(tika_text, our_text)
            row["shares"].append(value)
            row["low"].append((value, path))
    out = [{"mimetype": kind, **row, "median": statistics.median(row["shares"]) if row["shares"] else None}
           for kind, row in rows.items()]
    return sorted(out, key=lambda r: (-r["files"], r["mimetype"]))


def report(rows: list[dict], tika_cpu: float, our_cpu: float, files: int, workers: int, show_low: int) -> None:
    print(f"beamtrawl vs Apache Tika {TIKA}: {files:,} files, {workers} workers / threads, {os.cpu_count()} CPUs")
    print(f"\n  {'MIME type':<64} {'files':>6} {'Tika':>6} {'ours':>6} {'median':>7} {'only T':>6} {'only o':>6}")
    for r in rows:
        median = f"{r['median']:.3f}" if r["median"] is not None else "-"
        print(f"  {r['mimetype'][:64]:<64} {r['files']:>6} {r['tika']:>6} {r['ours']:>6} {median:>7} "
              f"{r['only_tika']:>6} {r['only_ours']:>6}")
    tika_read = sum(r["tika"] for r in rows)
    both = tika_read - sum(r["only_tika"] for r in rows)
    shares = [s for r in rows for s in r["shares"]]
    print(f"  {'total':<64} {files:>6} {tika_read:>6} {sum(r['ours'] for r in rows):>6} "
          f"{statistics.median(shares) if shares else 0:>7.3f} {sum(r['only_tika'] for r in rows):>6} "
          f"{sum(r['only_ours'] for r in rows):>6}")
    low_types = [r["mimetype"] for r in rows if r["median"] is not None and r["median"] < 0.95]
    print(f"\n  of the {tika_read} files Tika read, beamtrawl read {both} "
          f"({both / tika_read:.1%}; target ≥ 97 %)" if tika_read else "\n  Tika read no file")
    print(f"  types with a median word share below 0.95 (target: none): {len(low_types)}"
          + (f" — {', '.join(low_types)}" if low_types else ""))
    tika_rate, our_rate = files / tika_cpu if tika_cpu else 0, files / our_cpu if our_cpu else 0
    print(f"\n  Tika:      {tika_cpu:8.1f} CPU-s  {tika_rate:8.1f} documents per CPU-second (reads only)")
    print(f"  beamtrawl: {our_cpu:8.1f} CPU-s  {our_rate:8.1f} documents per CPU-second (reads and indexes)")
    print(f"  beamtrawl / Tika: {our_rate / tika_rate if tika_rate else 0:.2f}x (target ≥ 1.5x)")
    only_tika = sorted(path for r in rows for path in r["only_tika_files"])
    if only_tika:
        print("\n  files only Tika read:")
        for path in only_tika:
            print(f"    {path}")
    if show_low:
        lows = sorted((value, path) for r in rows for value, path in r["low"])[:show_low]
        print("\n  lowest word shares:")
        for value, path in lows:
            print(f"    {value:.3f}  {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetch", action="store_true", help="resolve Tika and compile the peer, then stop")
    parser.add_argument("--corpus", choices=("real", "tika", "both"), default="both")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="six of Tika's test documents (the suite runs this)")
    parser.add_argument("--deadline", type=int, default=3600, help="seconds Tika may take in all")
    parser.add_argument("--keep", metavar="FOLDER", help="work in this (new) folder and keep it: both sides' texts")
    parser.add_argument("--ocr", action="store_true", help="both sides run tesseract (default: neither does)")
    parser.add_argument("--show-low", type=int, default=0, metavar="N", help="list the N files of lowest share")
    args = parser.parse_args()
    if args.fetch:
        fetch()
        return 0
    if not fetched():
        print("Tika is not fetched: run python bench/tika_compare.py --fetch (tests/run.sh does)")
        return 1
    compile_peer()
    with tempfile.TemporaryDirectory(prefix="beamtrawl-tika-") as folder:
        work = Path(args.keep or folder)
        work.mkdir(parents=True, exist_ok=True)
        roots = []
        if args.tiny or args.corpus in ("tika", "both"):
            _tika_documents(work / "tika", set(TINY) if args.tiny else None)
            roots.append(work / "tika")
        if not args.tiny and args.corpus in ("real", "both"):
            from tests.real_corpus import corpus

            roots.append(corpus())
        files = _files(roots)
        started = time.perf_counter()
        tika, tika_cpu = run_tika(files, args.workers, work, args.deadline, args.ocr)
        ours, our_cpu, code = run_beamtrawl(roots, args.workers, work, args.ocr)
        if not tika or not ours:
            print(f"a side did not run: Tika read {len(tika)} files, beamtrawl indexed {len(ours)} (exit {code})")
            return 1
        report(compare(files, tika, ours), tika_cpu, our_cpu, len(files), args.workers, args.show_low)
        print(f"\n  words: \\w+ lowercased on both sides; beamtrawl's text is every searched column but the file name"
              f" and URL (title, content, headlines, metadata, furniture); a word Tika glues from up to {GLUE} of"
              " beamtrawl's adjacent words (a key and its value) counts as found")
        print(f"  OCR: {'on for both (tesseract)' if args.ocr else 'off for both (--ocr runs tesseract on both sides)'}")
        print(f"\n  (both runs: {time.perf_counter() - started:.0f} s wall; the crawl exited {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
