"""Enrichment benchmark: what auxiliary fields and access groups cost the embedded index.

Run from the repository root::

    python bench/enrich_bench.py [--docs 20000] [--queries 200] [--files 20000] [--tiny]

In one run, on generated documents (about 1 KB of text each, three folder levels, half of them with
one of four access groups), it measures:

(a) writing: ``make_document`` + ``EmbeddedIndex.upsert`` in batches of 500, in documents per second,
    with regain's two default auxiliary fields plus one configured field (``extension``, ``location``,
    ``project``) against the same work with no auxiliary fields (the baseline). Both write N documents
    of the same text into fresh index files.
(b) searching: mean milliseconds per query for the same word queries on the index of (a), as a
    searcher holding two groups (documents with either group or none, minus those denying one: an
    eighth of the documents deny ``lab``) against a public searcher (documents without groups: the
    baseline); and ``project:p3`` (an auxiliary field filter) against ``extension:txt`` (a column of
    the docs table).
(c) the posix access controller on a real tree (``--files`` files in folders of 100, three levels, a
    quarter of the folders private or with an ACL entry): microseconds per file for its full rule
    (every folder from ``/`` and ACLs, cached per folder and per mode/ACL) against the rule it
    replaced (the file's own mode only: one stat and a cached name lookup, the baseline), and the full
    rule without its caches; all three on the same files.

It prints the figures and their ratios to the baselines; no target is asserted. ``--tiny``
(tests/test_benchmarks.py runs it): 1,000 documents, 20 queries, 400 files.
"""

from __future__ import annotations

import argparse
import os
import pwd
import random
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beamtrawl.transforms.enrich.access import PosixOwnership
from beamtrawl.transforms.enrich.auxfields import DEFAULT_AUX_FIELDS, AuxFieldSpec
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.sources.file import path_to_url, url_to_path
from beamtrawl.transforms.urls import doc_id

WORDS = ("apple", "banana", "cherry", "delta", "echo", "falcon", "glacier", "harbor", "island", "jungle", "kernel",
         "lantern", "meadow", "nebula", "orchard", "pepper", "quartz", "river", "saddle", "timber", "umbrella",
         "valley", "walnut", "xenon", "yonder", "zephyr")
GROUPS = ("hr", "finance", "board", "lab")
FIELDS = (*DEFAULT_AUX_FIELDS, AuxFieldSpec("project", re.compile("/projects/([^/]*)/", re.IGNORECASE)))


def entries(n: int, seed: int) -> list[tuple[Entry, Prepared]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        url = f"file:///srv/projects/p{i % 10}/f{i // 10 % 20}/doc{i}.txt"
        groups = [GROUPS[i % 4]] if i % 2 else []
        text = " ".join(rng.choice(WORDS) for _ in range(150))
        entry = Entry(doc_id(url), url, "file:///srv/projects", 3, len(text), i, "", None, "", [], "", "", "", "",
                      groups=groups, denied=["lab"] if i % 8 == 1 else [])
        out.append((entry, Prepared(title=f"Document {i}", content=text)))
    return out


def write(path: str, docs, fields) -> float:
    index = EmbeddedIndex(path)
    index.prepare()
    options = PrepareOptions((), "fp", 2**20, 1000, aux_fields=fields)
    started = time.perf_counter()
    for start in range(0, len(docs), 500):
        batch = [make_document(RawDocument(e, "text/plain", b"x", ""), p, options) for e, p in docs[start:start + 500]]
        assert index.upsert(batch) == []
    seconds = time.perf_counter() - started
    assert index.count() == len(docs)
    index.close()
    return len(docs) / seconds


def search_ms(path: str, texts: list[str], groups, fields=("project",)) -> float:
    index = EmbeddedIndex(path)
    queries = [parse_query(t, fields, groups) for t in texts]
    for query in queries[:10]:  # warm the page cache
        index.search(query, 10)
    started = time.perf_counter()
    for query in queries:
        index.search(query, 10)
    return (time.perf_counter() - started) * 1000 / len(queries)


def posix_tree(root: Path, files: int) -> list[str]:
    """``files`` files, 100 per folder, folders three levels deep; every fourth folder private (0700)
    or, every eighth, with an ACL entry for a group (``setfacl``, when the file system keeps ACLs)."""
    urls = []
    for n in range(files):
        folder = root / f"a{n // 10_000}" / f"b{n // 1_000 % 10}" / f"c{n // 100 % 10}"
        if n % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
            if n // 100 % 4 == 1:
                folder.chmod(0o700)
            elif n // 100 % 8 == 3:
                subprocess.run(["setfacl", "-m", "g:daemon:rx", str(folder)], check=False, capture_output=True)
        path = folder / f"f{n}.txt"
        path.write_bytes(b"x")
        path.chmod(0o640 if n % 3 else 0o644)
        urls.append(path_to_url(str(path)))
    return urls


def own_mode_only(urls: list[str]) -> None:
    """The rule PosixOwnership followed before (issue 15): the file's own mode, names cached."""
    names: dict[int, str] = {}
    for url in urls:
        st = os.stat(url_to_path(url))
        if not st.st_mode & stat.S_IROTH:
            names.setdefault(st.st_uid, pwd.getpwuid(st.st_uid).pw_name)


def posix_us(urls: list[str], cached: bool) -> float:
    controller = PosixOwnership()
    started = time.perf_counter()
    for url in urls:
        if not cached:
            controller._folders.clear()
            controller._checks.clear()
        controller.groups(Entry(doc_id(url), url, "", 0, 0, 0, "", None, "", [], "", "", "", ""))
    return (time.perf_counter() - started) * 1e6 / len(urls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--tiny", action="store_true", help="1,000 documents, 20 queries, 400 files")
    args = parser.parse_args()
    if args.tiny:
        args.docs, args.queries, args.files = 1000, 20, 400
    docs = entries(args.docs, args.seed)
    rng = random.Random(args.seed)
    texts = [" ".join(rng.sample(WORDS, 2)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as work:
        plain = write(f"{work}/plain.sqlite", docs, ())
        enriched = write(f"{work}/aux.sqlite", docs, FIELDS)
        public = search_ms(f"{work}/aux.sqlite", texts, ())
        grouped = search_ms(f"{work}/aux.sqlite", texts, ("hr", "lab"))
        by_column = search_ms(f"{work}/aux.sqlite", ["extension:txt"] * args.queries, ("hr", "lab"))
        by_aux = search_ms(f"{work}/aux.sqlite", ["project:p3"] * args.queries, ("hr", "lab"))
    with tempfile.TemporaryDirectory(dir="/tmp") as work:
        os.chmod(work, 0o755)
        urls = posix_tree(Path(work), args.files)
        own_mode_only(urls)  # warm the page cache
        started = time.perf_counter()
        own_mode_only(urls)
        before = (time.perf_counter() - started) * 1e6 / len(urls)
        full = posix_us(urls, cached=True)
        uncached = posix_us(urls[: max(1, len(urls) // 20)], cached=False)
    print(f"{args.docs} documents, {args.queries} queries, embedded index (SQLite {__import__('sqlite3').sqlite_version})")
    print(f"(a) write, 3 auxiliary fields : {enriched:8.0f} docs/s   baseline no auxiliary fields {plain:8.0f} docs/s"
          f"   ratio {enriched / plain:.2f}")
    print(f"(b) search as groups hr,lab   : {grouped:8.2f} ms/query baseline public searcher      {public:8.2f} ms/query"
          f"   ratio {grouped / public:.2f}")
    print(f"    filter project:p3 (aux)   : {by_aux:8.2f} ms/query baseline extension:txt         {by_column:8.2f} ms/query"
          f"   ratio {by_aux / by_column:.2f}")
    print(f"(c) posix controller      : {full:8.1f} us/file  baseline own mode only          {before:8.1f} us/file"
          f"   ratio {full / before:.2f}")
    print(f"    posix without its caches  : {uncached:8.1f} us/file  (on 1/20 of the files)             "
          f"   ratio {uncached / before:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
