"""Every benchmark in bench/ runs in its tiny mode, so that none rots: the same code path as the full run on a
handful of files or requests, printing its figure and its ratio to the baseline of the same run. No figure is
asserted (no timed assertions in tests); the exit code and the figure's line are.

Benchmarks that need a server start the one of tests/servers/ the other tests start (Samba, Dovecot, the
loopback website), or get the session's OpenSearch node (``--url``). hidden_timing_bench, signin_bench and
soak_bench run in tests/test_hidden_timing.py, tests/test_signin.py and tests/test_listings.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# bench → (the line that carries its figure and ratio, whether it needs the OpenSearch node)
BENCHES = {
    "cluster_bench": ("cluster/direct:", True),
    "code_bench": ("ratio code/text (CPU time):", False),
    "crawl_bench": ("beamtrawl/loop:", False),
    "enrich_bench": ("baseline no auxiliary fields", False),
    "http_bench": ("ratio beamtrawl/Scrapy", False),
    "imap_bench": ("re-crawl, unchanged", False),
    "load_bench": ("peak memory ratio", True),
    "opensearch_bench": ("sink/loop:", True),
    "prepare_bench": ("mixed corpus: beam×1 =", False),
    "real_world_bench": ("full crawl / baseline", False),
    "s3_bench": ("ratio to (a):", False),
    "semantic_bench": ("hybrid on questions:", False),
    "serve_bench": ("opensearch: target web/direct", True),
    "smb_bench": ("ratio beamtrawl (acls off) / smbclient:", False),
    "startup_bench": ("one-file crawl (2 workers), current:", False),
    "table_bench": ("sink throughput / write_deltalake", False),
}


@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_the_benchmark_runs_in_its_tiny_mode(request, bench):
    figure, needs_node = BENCHES[bench]
    extra = ["--url", request.getfixturevalue("opensearch")] if needs_node else []
    # the beamtrawl command of this environment, as a user who installed it has it on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, str(REPO / "bench" / f"{bench}.py"), "--tiny", *extra],
                          capture_output=True, text=True, timeout=900, check=False, cwd=REPO, env=env)
    print(done.stdout[-3000:])  # the figures, for pytest -rP
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert figure in done.stdout, done.stdout[-3000:]


def test_every_benchmark_has_a_test_that_runs_its_tiny_mode():
    """A benchmark that no test runs rots (issue 27, item 8): each bench/*.py program (one with a ``__main__``)
    takes ``--tiny`` and is named, in a test module that passes ``--tiny``, here or beside its feature."""
    tests = {path.name: path.read_text() for path in (REPO / "tests").glob("test_*.py")}
    missing = []
    for bench in sorted((REPO / "bench").glob("*.py")):
        text = bench.read_text()
        if '__name__ == "__main__"' not in text:
            continue  # data for a benchmark (ocr_scans.py), no program
        runners = [name for name, test in tests.items() if bench.stem in test and "--tiny" in test]
        if "--tiny" not in text or not (bench.stem in BENCHES or runners):
            missing.append(bench.name)
    assert not missing, f"benchmarks without a tiny mode a test runs: {missing}"
