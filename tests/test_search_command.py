"""``beamtrawl search`` as a new user meets it (issue 28, items 8 and 9): beside the ``crawl.yaml`` that
``init`` wrote it needs no --config; it prints the total, local paths and decoded URLs, the text as the
snippet (never the URL), and highlights matches on a terminal only."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import beamtrawl


def _run_in(folder: Path, *args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """The command run in ``folder``, as a user types it there."""
    return subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", *args], cwd=folder, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300, check=False)


def _tree(root: Path) -> None:
    (root / "meeting notes").mkdir(parents=True)
    (root / "meeting notes" / "march minutes.txt").write_text(
        "Minutes of the March meeting. The quokka budget was approved.\n", encoding="utf-8")
    (root / "quokka.txt").write_text("Nothing about the animal here, only the beginning of a text.\n",
                                     encoding="utf-8")
    for n in range(3):
        (root / f"budget-{n}.txt").write_text(f"Budget number {n} for the year.\n", encoding="utf-8")


def test_search_and_serve_read_crawl_yaml_of_this_folder(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    _tree(root)
    config = make_config(root)  # tmp_path / crawl.yaml
    assert crawl(config).code == 0
    found = _run_in(tmp_path, "search", "quokka")
    assert found.returncode == 0, found.stderr
    assert "march minutes.txt" in found.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = _run_in(elsewhere, "search", "quokka")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [("beamtrawl search: no --config given and no crawl.yaml in "
                                                    "this folder (write one with: beamtrawl init START_URL)")]
    serve = _run_in(elsewhere, "serve", "--port", "1")
    assert serve.returncode == 2 and "no --config given and no crawl.yaml" in serve.stderr


def test_hits_show_the_total_local_paths_and_the_text_never_the_url(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    _tree(root)
    config = make_config(root)
    assert crawl(config).code == 0
    done = beamtrawl("search", "budget", "--config", str(config), "--limit", "2", check_dac=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "4 documents found; the best 2:"
    assert "\x1b[" not in done.stdout  # a pipe gets no escape codes
    one = beamtrawl("search", "minutes", "--config", str(config), check_dac=False).stdout
    assert one.splitlines()[0] == "1 document found"
    assert f"   {root}/meeting notes/march minutes.txt" in one.splitlines()  # the path, decoded
    assert "%20" not in one
    # "quokka" matches quokka.txt by its name only: the snippet is the text's beginning, not the URL
    named = beamtrawl("search", "quokka", "--config", str(config), check_dac=False).stdout
    block = next(b for b in named.split("\n\n")[1:] if b.split("\n")[1].endswith("/quokka.txt"))
    assert block.split("\n")[2].strip().startswith("Nothing about the animal here"), block
    assert "file://" not in named


def test_a_terminal_sees_the_matches_highlighted(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    _tree(root)
    config = make_config(root)
    assert crawl(config).code == 0
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm"}
    try:
        done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "search", "approved", "--config",
                               str(config)], stdout=follower, stderr=subprocess.PIPE, timeout=300, env=env,
                              check=False)
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    assert "\x1b[1;7mapproved\x1b[0m" in output.decode()


@pytest.mark.parametrize("target", ["embedded", "opensearch"])
def test_copies_are_one_hit_and_snippets_are_text_on_both_targets(tmp_path, make_config, request, crawl, search,
                                                                  target):
    root = tmp_path / "docs"
    _tree(root)
    for folder in ("share a", "share b"):
        (root / folder).mkdir()
        (root / folder / "guide.txt").write_text("The wombat guide: burrows and diet.\n", encoding="utf-8")
    config = make_config(root) if target == "embedded" else request.getfixturevalue("os_config")(root)
    assert crawl(config).code == 0
    [hit] = search(config, "wombat")
    assert {hit["url"], *hit["locations"]} == {f"file://{root}/share%20a/guide.txt", f"file://{root}/share%20b/guide.txt"}
    text = beamtrawl("search", "wombat", "--config", str(config), check_dac=False).stdout
    assert text.splitlines()[0] == "1 document found"
    also = [line for line in text.splitlines() if line.startswith("   also at ")]
    assert len(also) == 1 and also[0].startswith(f"   also at {root}/share ") and "%20" not in also[0]
    [named] = [h for h in search(config, "quokka") if h["url"].endswith("/quokka.txt")]
    assert named["snippet"].startswith("Nothing about the animal here") and "file://" not in named["snippet"]
