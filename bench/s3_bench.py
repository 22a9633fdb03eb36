"""S3 benchmark: a bucket of small text objects over many prefixes, on moto's S3 server on loopback.

Run from the repository root::

    PYTHONPATH=$PWD python bench/s3_bench.py [--objects 100000] [--prefixes 200] [--workers 2] [--tiny]

It starts the server (tests/servers/s3.py) and puts the objects (not timed). Then it times, as whole
processes where beamtrawl runs:

(a) the plain listing: one boto3 client paginating ``list_objects_v2`` over the whole bucket;
(b) the plain loop, a process of its own (``s3_bench.py --loop CONFIG INDEX``): the crawl's own client (the S3
    source's boto3 client, with the crawl file's settings) pages through the bucket and GETs every object, one
    after the other; each is prepared as the crawl prepares it (MimeSniffer, the first preparator of its chain:
    the same extraction, ``make_document``) and upserted, 500 at a time, into its own fresh embedded index;
(c) the first crawl: ``beamtrawl crawl CFG --direct_num_workers=W`` into a fresh embedded index; ratio (b)/(c)
    (the issue's target: ≥ 1.3 with two workers); both timed as whole processes, start to exit;
(d) the unchanged re-crawl: its report must say read 0; ratio (d)/(a) (target: ≤ 3).

Exit code 0 when measured (a target may be missed), 1 when a check fails. ``--tiny`` (200 objects) is what
the test suite runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers.s3 import running_s3

WORDS = ["harbour", "survey", "glacier", "sensor", "budget", "meeting", "river", "station", "report", "draft"]
BUCKET = "bench-bucket"


def _fill(client, objects: int, prefixes: int) -> None:
    client.create_bucket(Bucket=BUCKET)

    def put(n: int) -> None:
        text = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(60)) + f" object{n}"
        client.put_object(Bucket=BUCKET, Key=f"p{n % prefixes:04d}/sub{n % 7}/doc{n}.txt", Body=text.encode())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(objects)))


def _plain_listing(client) -> tuple[float, int]:
    started = time.perf_counter()
    count = sum(len(page.get("Contents", ())) for page in
                client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET))
    return time.perf_counter() - started, count


def run_loop(config_path: str, index_path: str) -> None:
    """List, GET, sniff, prepare, build documents and upsert them, in one process, with the crawl's client."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.records import Entry
    from beamtrawl.transforms.sources.object_store import mtime_ns, object_url
    from beamtrawl.transforms.sources.s3 import S3Source
    from beamtrawl.transforms.sources.settings import SourceSettings
    from beamtrawl.transforms.urls import depth_below, doc_id
    from crawl_bench import LoopIndex

    config = load_config(config_path)
    root = config.start[0].url
    client = S3Source(SourceSettings.from_config(config)).s3(root)
    loop = LoopIndex(config, index_path)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for found in page.get("Contents", ()):
            url = object_url("s3", BUCKET, found["Key"])
            entry = Entry(id=doc_id(url), url=url, root=root, depth=depth_below(url, root), size=found["Size"],
                          mtime_ns=mtime_ns(found["LastModified"]), identity="", content=None, mimetype="",
                          outlinks=[], etag=found["ETag"].strip('"'), http_last_modified="", source_url="",
                          link_text="")
            loop.add(entry, client.get_object(Bucket=BUCKET, Key=found["Key"])["Body"].read(config.max_file_size + 1))
    print(json.dumps({"written": loop.close()}))


def _plain_loop(config: Path, env: dict) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--loop", str(config), str(config.with_name("loop.sqlite"))],
                          cwd=REPO, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return seconds, 0
    return seconds, json.loads(done.stdout.splitlines()[-1])["written"]


def _crawl(config: Path, workers: int, env: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config),
                           f"--direct_num_workers={workers}"], cwd=REPO, capture_output=True, text=True,
                          check=False, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return seconds, json.loads(config.with_name("index.report.json").read_text(encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--prefixes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="200 objects over 10 prefixes (the suite's run)")
    parser.add_argument("--no-loop", action="store_true", help="leave (b) out (it takes as long as a crawl)")
    parser.add_argument("--loop", nargs=2, metavar=("CONFIG", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        run_loop(*args.loop)
        return 0
    if args.tiny:
        args.objects, args.prefixes = 200, 10
    with tempfile.TemporaryDirectory(prefix="beamtrawl-s3-bench-") as folder, running_s3(Path(folder)) as server:
        login = {k: v for k, v in server.storage_options().items() if k.startswith(("AWS_ACCESS", "AWS_SECRET", "AWS_REGION"))}
        env = {**os.environ, **login, "PYTHONPATH": str(REPO)}
        client = boto3.client("s3", endpoint_url=server.endpoint, region_name=login["AWS_REGION"],
                              aws_access_key_id=login["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=login["AWS_SECRET_ACCESS_KEY"])
        _fill(client, args.objects, args.prefixes)
        config = Path(folder) / "crawl.yaml"
        config.write_text(yaml.safe_dump({"start": [{"url": f"s3://{BUCKET}/"}], "index": {"path": "index.sqlite"},
                                          "s3": {"endpoint_url": server.endpoint}}), encoding="utf-8")
        listing, listed = _plain_listing(client)
        loop, looped = _plain_loop(config, env) if not args.no_loop else (0.0, args.objects)
        first, report = _crawl(config, args.workers, env)
        again, second = _crawl(config, args.workers, env)
    ok = (listed == args.objects == looped and report.get("counts", {}).get("written") == args.objects
          and second.get("counts", {}).get("read") == 0 and second["counts"]["unchanged"] == args.objects)
    print(f"objects: {args.objects} over {args.prefixes} prefixes; workers: {args.workers}")
    print(f"(a) plain paginated listing: {listing:.2f} s")
    print("(b) not run (--no-loop)" if args.no_loop else
          f"(b) plain download-and-prepare loop: {loop:.2f} s (one process, one object after the other, with the "
          "crawl's client, MimeSniffer, the same first preparator and make_document, upserts of 500 into its "
          "own embedded index)")
    print(f"(c) first crawl: {first:.2f} s; speed-up over (b): {loop / first:.2f}x (target ≥ 1.3)" if loop
          else f"(c) first crawl: {first:.2f} s")
    print(f"(d) unchanged re-crawl: {again:.2f} s; ratio to (a): {again / listing:.2f}x (target ≤ 3)")
    if not ok:
        print(f"CHECK FAILED: listed {listed}, loop wrote {looped}, first {report.get('counts')}, "
              f"again {second.get('counts')}",
              file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
