"""IMAP benchmark: messages per second for a first crawl of 2,000 messages, and the re-crawl of the
unchanged mailbox as a ratio to the first crawl (target ≤ 0.1).

Run as root from the repository root (Debian's dovecot-imapd installed)::

    PYTHONPATH=$PWD python bench/imap_bench.py [--messages 2000] [--workers 2] [--tiny]

It starts Dovecot on loopback (tests/servers/dovecot.py) and APPENDs the messages (not timed): plain
and multipart/alternative text of 1-4 KB over four folders. Then it times, as whole processes:

(a) first crawl: ``beamtrawl crawl CFG --direct_num_workers=W`` of ``imap://`` (STARTTLS) into a fresh
    embedded index: messages per second; the report must say written = N;
(b) re-crawl of the unchanged mailbox: seconds and the ratio (b)/(a); the report must say read 0. Every
    folder's STATUS matches what the first crawl saw, so no pipeline runs (pipeline/unchanged.py);
(b') for the other case, a re-crawl after one new message: the pipeline runs and reads that one message;
(c) the IMAP part of the re-crawl alone: ``transforms.sources.imap.expand`` of the server in this
    process (login, LIST, EXAMINE and the UID/size/date/structure listing of every folder);
(d) for scale, a plain single-process IMAPClient loop over the same folders doing only the fetching
    part of (a): EXAMINE, then UID FETCH BODY.PEEK[] of every message (no parsing, no index);
(e) the peer for the ratio: the same messages as .eml files in local folders, crawled and re-crawled
    through the ``file://`` source with the same command, to show the pipeline's fixed cost.

The baseline of the headline ratio is the first crawl in the same run; (d) and (e) are for scale, and
get the same messages. ``--tiny`` (tests/test_benchmarks.py runs it): 20 messages.

Exit code 0 when measured (the target may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

import yaml
from imapclient import IMAPClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers.dovecot import running_dovecot

USER, PASSWORD = "benchmail", "Bench-Mail-Secret-3"
FOLDERS = ("INBOX", "Archive", "Archive/2023", "Projects")
WORDS = ["harbour", "survey", "glacier", "sensor", "budget", "meeting", "calibration", "river", "station",
         "report", "draft", "review", "quarterly", "winter", "summer", "northern", "coastal", "archive",
         "storage", "network", "policy"]


def _message(n: int, rng: random.Random) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"user{n % 37}@example.org"
    msg["To"] = "team@example.org"
    msg["Subject"] = f"Message {n}: " + " ".join(rng.choices(WORDS, k=4))
    body = " ".join(rng.choices(WORDS, k=rng.randint(150, 600)))
    msg.set_content(body)
    if n % 3 == 0:
        msg.add_alternative(f"<html><body><p>{body}</p></body></html>", subtype="html")
    return bytes(msg)


def _client(server) -> IMAPClient:
    client = IMAPClient("127.0.0.1", server.imaps_port, ssl=True,
                        ssl_context=ssl.create_default_context(cafile=str(server.ca_file)))
    client.login(USER, PASSWORD)
    return client


def _crawl(config: Path, workers: int) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config),
                           f"--direct_num_workers={workers}"], cwd=REPO, capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - started
    index = yaml.safe_load(config.read_text(encoding="utf-8"))["index"]["path"]
    report = json.loads(config.with_name(Path(index).stem + ".report.json").read_text(encoding="utf-8"))
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return seconds, report


def _plain_fetch(server) -> float:
    started = time.perf_counter()
    client = _client(server)
    for folder in FOLDERS:
        client.select_folder(folder, readonly=True)
        for uid in client.search(["ALL"]):
            client.fetch([uid], ["BODY.PEEK[]"])
    client.logout()
    return time.perf_counter() - started


def _listing(server, config: Path) -> float:
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.accept import Rules
    from beamtrawl.transforms.records import FrontierItem
    from beamtrawl.transforms.sources.imap import ImapSource
    from beamtrawl.transforms.sources.settings import SourceSettings

    loaded = load_config(str(config))
    source = ImapSource(SourceSettings.from_config(loaded))
    url = loaded.start[0].url
    started = time.perf_counter()
    found = sum(r.route == "entries" for r in source.expand(FrontierItem(url, url, 0, url, [], "", ""),
                                                             Rules(loaded), False, None))
    seconds = time.perf_counter() - started
    assert found > 0
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="20 messages: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.messages = 20
    rng = random.Random(7)
    with running_dovecot({USER: PASSWORD}) as server, tempfile.TemporaryDirectory() as tmp:
        client = _client(server)
        for folder in FOLDERS[1:]:
            client.create_folder(folder)
        eml = Path(tmp) / "eml"
        for n in range(args.messages):
            raw = _message(n, rng)
            client.append(FOLDERS[n % len(FOLDERS)], raw)
            (eml / FOLDERS[n % len(FOLDERS)]).mkdir(parents=True, exist_ok=True)
            (eml / FOLDERS[n % len(FOLDERS)] / f"{n}.eml").write_bytes(raw)
        client.logout()
        start = server.url("imap")
        (Path(tmp) / "password").write_text(PASSWORD, encoding="utf-8")
        config = Path(tmp) / "crawl.yaml"
        config.write_text(yaml.safe_dump({
            "start": [{"url": start}], "whitelist": [{"prefix": start}], "index": {"path": "index.sqlite"},
            "credentials": [{"url": start, "username": USER, "password_file": "password"}],
            "imap": {"ca_file": str(server.ca_file)}}), encoding="utf-8")
        first, first_report = _crawl(config, args.workers)
        again, again_report = _crawl(config, args.workers)
        client = _client(server)
        client.append(FOLDERS[0], _message(args.messages, rng))
        client.logout()
        one_new, one_new_report = _crawl(config, args.workers)
        listing = _listing(server, config)
        plain = _plain_fetch(server)
        files = Path(tmp) / "files.yaml"
        files.write_text(yaml.safe_dump({"start": [{"url": str(eml)}], "index": {"path": "files.sqlite"}}),
                         encoding="utf-8")
        file_first, _ = _crawl(files, args.workers)
        file_again, file_report = _crawl(files, args.workers)
    counts, recounts = first_report["counts"], again_report["counts"]
    n = args.messages
    ok = (counts["written"] == n and recounts["read"] == 0 and recounts["unchanged"] == n
          and "pipeline_skipped" in again_report and one_new_report["counts"]["read"] == 1)
    ratio = again / first
    print(f"IMAP crawl of {args.messages} messages in {len(FOLDERS)} folders, Dovecot on loopback, "
          f"STARTTLS, --direct_num_workers={args.workers} (whole processes, start-up included)")
    print(f"  first crawl           {first:7.2f} s  {args.messages / first:7.1f} messages/s  "
          f"(written {counts['written']}, pipeline {first_report['timings']['pipeline_s']} s)")
    print(f"  re-crawl, unchanged   {again:7.2f} s  ratio to first crawl {ratio:.3f} (target <= 0.1: "
          f"{'PASS' if ratio <= 0.1 else 'MISS'}; read {recounts['read']}, "
          f"unchanged {recounts['unchanged']}, "
          f"pipeline {'not run' if 'pipeline_skipped' in again_report else 'ran'})")
    print(f"  re-crawl, 1 new message {one_new:5.2f} s  ratio to first crawl {one_new / first:.3f} "
          f"(read {one_new_report['counts']['read']}, unchanged {one_new_report['counts']['unchanged']}; "
          f"the pipeline runs, {one_new_report['timings']['pipeline_s']} s)")
    print(f"  IMAP listing alone (discovery of the unchanged mailbox, one process) {listing:.2f} s = "
          f"{listing / first:.3f} of the first crawl")
    print(f"  the same messages as .eml files (file:// source, same pipeline): first crawl {file_first:.2f} s, "
          f"re-crawl {file_again:.2f} s, ratio {file_again / file_first:.3f} "
          f"(unchanged {file_report['counts']['unchanged']}) - the pipeline's fixed cost, whatever the source")
    print(f"  plain IMAPClient fetch of every message (one process, no preparation or index) {plain:.2f} s, "
          f"{args.messages / plain:.0f} messages/s; first crawl / plain fetch = {first / plain:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
