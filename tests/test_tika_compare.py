"""The peer benchmark against Apache Tika (bench/tika_compare.py) runs: its --tiny mode, on six of Tika's
test documents, with Tika resolved from Maven Central by tests/package_files.py (no figure is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import tika_compare


def test_word_share_counts_distinct_words_of_tika_found_in_ours():
    assert tika_compare.share("The cat, the CAT and a dog", "a cat") == pytest.approx(2 / 5)  # the, cat, and, a, dog
    assert tika_compare.share("", "anything") == 1.0
    assert not tika_compare.read("x" * 49) and tika_compare.read("x" * 50)


def test_a_word_tika_glues_counts_when_ours_has_its_parts_adjacent():
    """Tika's ``ArtistJimi`` (a key glued to its value) is found in ``Artist: Jimi``; ``dogfrog`` is not found in
    ``dog cat frog`` (not adjacent) nor in ``frog dog`` (not in order); runs longer than GLUE words do not count."""
    assert tika_compare.share("ArtistJimi HEADING11ENTRY11 Qtr2nd", "Artist: Jimi\nHEADING11\nENTRY11\nQtr\t2nd") == 1.0
    assert tika_compare.share("dogfrog", "dog cat frog") == 0.0 and tika_compare.share("dogfrog", "frog dog") == 0.0
    many = [f"w{i}" for i in range(tika_compare.GLUE + 1)]
    assert tika_compare.share("".join(many), " ".join(many)) == 0.0
    assert tika_compare.share("".join(many[:-1]), " ".join(many)) == 1.0


def test_tiny_comparison_prints_every_type_and_both_rates():
    if not tika_compare.fetched():
        pytest.fail("Tika is not fetched: run python -m tests.package_files (tests/run.sh does)")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "tika_compare.py"), "--tiny"], capture_output=True,
                          text=True, timeout=900, cwd=REPO, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for kind in ("application/pdf", "application/x-7z-compressed", "application/warc", "application/x-java-applet"):
        assert f"  {kind} " in done.stdout, done.stdout
    assert "of the 6 files Tika read, beamtrawl read" in done.stdout
    assert "documents per CPU-second (reads and indexes)" in done.stdout and "beamtrawl / Tika:" in done.stdout
    assert "OCR: off for both" in done.stdout
