"""SMB listing benchmark: listing and stat of 10,000 files through beamtrawl's SMB discovery, against
Samba's own ``smbclient -c 'recurse; ls'`` on the same share in the same run.

Run as root from the repository root (Debian's samba and smbclient installed)::

    PYTHONPATH=$PWD python bench/smb_bench.py [--files 10000] [--per-folder 100] [--repeat 3] [--tiny]

It writes the files (100 per folder, not timed) into a share of a Samba server started on loopback
(tests/servers/samba.py), then times, best of ``--repeat``:

(a) beamtrawl: ``transforms.sources.smb.expand`` of the share, no walk budget, in one process — every
    folder listed, every file's size and last-write time taken from the listing (the same work
    ``smbclient ls`` does), with ``smb.read_acls`` off;
(b) the same with ``smb.read_acls`` on (one extra QUERY_INFO per file for its security descriptor,
    over ``smb_client.ACL_CONNECTIONS`` connections);
(c) the baseline: ``smbclient -c 'recurse; ls'`` (a fresh process with its own login, like (a) and
    (b), which also log in anew).

Both sides get the same share, login and loopback server. Prints seconds, files per second and the
ratios (a)/(c) and (b)/(c). ``--tiny`` (tests/test_benchmarks.py runs it): 60 files, 20 per folder, one
run of each. Exit code 0 when measured, 1 when a side did not see every file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from beamtrawl.pipeline.config import Credential, StartUrl, UrlPattern
from beamtrawl.transforms.records import FrontierItem
from beamtrawl.transforms.sources import smb, smb_client
from beamtrawl.transforms.sources.settings import SourceSettings

from tests.servers.samba import running_samba

USER, PASSWORD = "btbench", "Bench-Secret-1"


class _Rules:
    """Accept everything under the share (what a whitelist prefix of the share URL gives)."""

    def __init__(self, root: str):
        self.pattern = UrlPattern(prefix=root)
        self.root = StartUrl(root)

    def decide(self, url, depth=0):
        from beamtrawl.transforms.accept import Decision
        return Decision(self.pattern.matches(url), True, True)

    def start(self, url):
        return self.root if url == self.root.url else None


def _beamtrawl(url: str, read_acls: bool) -> tuple[float, int]:
    smb_client._CONNECTIONS.clear()  # fresh connections and logins, as a new worker process has
    smb_client._ACL_LOCAL = threading.local()
    started = time.perf_counter()
    settings = SourceSettings((Credential(url, USER, PASSWORD),), sections=(("smb", smb.SmbSettings(read_acls=read_acls)),))
    source = smb.SmbSource(settings)
    found = sum(r.route == "entries" for r in source.expand(FrontierItem(url, url, 0, url, [], "", ""),
                                                             _Rules(url), False, None))
    return time.perf_counter() - started, found


def _smbclient(server) -> tuple[float, int]:
    started = time.perf_counter()
    done = server.smbclient("bench", "recurse; ls", USER, PASSWORD)
    seconds = time.perf_counter() - started
    files = sum(1 for line in done.stdout.splitlines() if line.strip().startswith("f") and " N " in line)
    return seconds, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--per-folder", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="60 files, one run: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.files, args.per_folder, args.repeat = 60, 20, 1
    with tempfile.TemporaryDirectory(prefix="beamtrawl-smb-bench-") as tmp:
        share = Path(tmp) / "share"
        for n in range(args.files):
            folder = share / f"d{n // args.per_folder:04d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{n:06d}.txt").write_bytes(b"x" * (n % 4096))
        with running_samba(Path(tmp) / "samba", {USER: PASSWORD}, {"bench": {"path": str(share)}}) as server:
            url = server.url("bench")
            plain = min(_beamtrawl(url, False) for _ in range(args.repeat))
            acls = min(_beamtrawl(url, True) for _ in range(max(1, args.repeat - 1)))
            baseline = min(_smbclient(server) for _ in range(args.repeat))
    print(f"SMB listing of {args.files} files in {args.files // args.per_folder} folders on loopback "
          f"(best of {args.repeat}; same share, login and server for every side)")
    rows = [("beamtrawl discovery, read_acls off", plain), ("beamtrawl discovery, read_acls on", acls),
            ("smbclient -c 'recurse; ls'", baseline)]
    for name, (seconds, files) in rows:
        print(f"  {name:38s} {seconds:7.3f} s  {files / seconds:9.0f} files/s  ({files} files seen)")
    print(f"  ratio beamtrawl (acls off) / smbclient: {plain[0] / baseline[0]:.2f}")
    print(f"  ratio beamtrawl (acls on)  / smbclient: {acls[0] / baseline[0]:.2f}")
    return 0 if all(files == args.files for _name, (_s, files) in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
