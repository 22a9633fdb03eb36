"""What a user reads (issue 14, item 8): a summary without counts that mean nothing, a failure ratio
over the documents actually considered, no library chatter on the terminal, a quiet end when the
reader of the output goes away. The web crawl's read count, dead links in the summary and the
unreachable host are checked in tests/test_http_crawl.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from beamtrawl.pipeline.report import summary
from beamtrawl.transforms.index.write import delete_guard

HERE = Path(__file__).resolve().parent


def _report(**counts) -> dict:
    from beamtrawl.pipeline.report import COUNTS

    return {"counts": {**dict.fromkeys(COUNTS, 0), **counts}, "documents_in_index": 3, "deletes_withheld": "",
            "problems": [], "timings": {"total_s": 1.0}, "report_path": "r.json"}


def test_the_summary_names_only_counts_that_mean_something():
    quiet = summary(_report(accepted=3, new=3, read=3, written=3))
    assert "kept" not in quiet and "deleted" not in quiet and "dead links" not in quiet
    assert "documents: 3 new, 0 changed, 0 unchanged, 0 failed\n" in quiet
    busy = summary(_report(accepted=3, new=1, unchanged=2, deleted=1, kept=4, dead_link=2))
    assert "1 deleted, 4 kept (their folder, host or start URL could not be crawled completely), 2 dead links" in busy


def test_the_failure_ratio_counts_each_document_considered_once():
    # 3,148 accepted documents, 1,269 of them failed to prepare: the old message said "of 4,417"
    totals = {"accepted": 3148, "failed": 1269, "failed@prepare": 1269, "in_index": 3148}
    refusal = delete_guard(totals, 0.1, 1.0)
    assert refusal.startswith("1269 of the 3148 documents this crawl considered failed (40.3%"), refusal
    # failures before acceptance (a broken link while listing) add to the documents considered
    totals = {"accepted": 8, "failed": 2, "failed@discover": 2, "in_index": 8}
    assert delete_guard(totals, 0.1, 1.0).startswith("2 of the 10 documents")


def test_library_warnings_stay_off_the_terminal(tmp_path, make_config, crawl):
    """pypdf says "EOF marker not found" about a PDF cut short; the report has the document's line."""
    root = tmp_path / "tree"
    root.mkdir()
    whole = (HERE / "data" / "samples" / "libreoffice.pdf").read_bytes()
    (root / "cut.pdf").write_bytes(whole[:whole.rfind(b"%%EOF")])
    (root / "fine.txt").write_text("fine words", encoding="utf-8")
    config = make_config(root)
    run = crawl(config)
    assert "EOF marker" not in run.stderr + run.stdout and "CAUTION" not in run.stderr + run.stdout
    assert set(run.problems("prepare")) == {f"file://{root}/cut.pdf"}
    (root / "cut.pdf").write_bytes(whole[:whole.rfind(b"%%EOF") - 1])  # changed: prepared again, with --debug
    assert "EOF marker not found" in crawl(config, "--debug").stderr


def test_search_into_a_closed_pipe_ends_quietly(tmp_path, make_config, crawl):
    root = tmp_path / "tree"
    root.mkdir()
    for n in range(400):
        (root / f"page{n}.txt").write_text(f"wombat burrow number {n} " + "tunnel " * 60, encoding="utf-8")
    config = make_config(root)
    assert crawl(config).code == 0
    command = f"{sys.executable} -m beamtrawl.pipeline.cli search wombat --config {config} --json --limit 400 | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120,
                          cwd=HERE.parent, env={**os.environ}, check=False)
    assert done.stdout == "[\n"
    assert (done.returncode, done.stderr) == (0, "")
