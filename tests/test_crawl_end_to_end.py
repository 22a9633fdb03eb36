"""End to end on a real tree: crawl, search, change the tree, crawl again, search again."""

from __future__ import annotations

import os
from pathlib import Path

LATIN1_NAME = b"caf\xe9 cr\xe8me.txt"  # not UTF-8: must survive as %E9 in the URL


def build_tree(root: Path) -> None:
    files = {
        "alpha.txt": "apples and avocados grow in the alpha orchard",
        "beta.html": "<html><head><title>Beta page</title></head><body><h1>Bravo heading</h1>"
                     "<p>The bravo section talks about boats.</p><script>var hidden='scriptword'</script></body></html>",
        "sub/deeper/charlie.txt": "charlie checks the chimney",
        "with space.txt": "spaces spoil shell scripts",
        "empty.txt": "",
        ".git/config": "gitsecret should never be indexed",
        "keep/k1.txt": "kiwi keeper one",
        "keep/k2.txt": "kiwi keeper two",
        "locked.txt": "lockword before the lock",
        "gone.txt": "goneword will vanish",
        "mod.txt": "modword first version!",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / os.fsdecode(LATIN1_NAME)).write_bytes("Grüße aus Köln, zwölf Äpfel".encode("latin-1"))


def urls(hits: list[dict]) -> set[str]:
    return {h["url"].rsplit("/", 1)[-1] for h in hits}


def test_crawl_change_recrawl(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    build_tree(root)
    config = make_config(root)

    first = crawl(config)
    assert first.code == 0, first.stderr
    assert first.counts["new"] == 11  # 12 files, .git/config blacklisted
    assert first.counts["written"] == 11 and first.counts["failed"] == 0
    assert first.counts["declined"] == 1
    assert urls(search(config, "apples")) == {"alpha.txt"}
    assert urls(search(config, "bravo")) == {"beta.html"}
    assert search(config, "bravo")[0]["title"] == "Beta page"
    assert search(config, "scriptword") == []
    assert search(config, "gitsecret") == []
    assert urls(search(config, "spaces")) == {"with%20space.txt"}
    assert urls(search(config, "zwölf")) == {"caf%E9%20cr%E8me.txt"}  # charset detected, name kept
    assert urls(search(config, "extension:txt empty")) == {"empty.txt"}  # found by its name

    unchanged = crawl(config)
    assert unchanged.code == 0
    assert unchanged.counts["unchanged"] == 11
    assert unchanged.counts["read"] == 0 and unchanged.counts["written"] == 0  # not one file opened

    (root / "new.txt").write_text("newword arrives", encoding="utf-8")
    mod = root / "mod.txt"
    stat = mod.stat()
    mod.write_text("modword second version", encoding="utf-8")  # same size, same day
    os.utime(mod, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))  # only nanoseconds apart
    (root / "gone.txt").unlink()
    (root / "keep").chmod(0)
    locked = root / "locked.txt"
    locked.write_text("lockword after the lock")
    locked.chmod(0)
    try:
        second = crawl(config)
    finally:
        (root / "keep").chmod(0o755)
        locked.chmod(0o644)

    assert second.code == 1, second.stderr  # some documents failed
    c = second.counts
    assert (c["new"], c["changed"], c["deleted"], c["kept"]) == (1, 2, 1, 2)
    assert c["unchanged"] == 6 and c["read"] == 2 and c["written"] == 2
    problems = second.problems()
    assert "Permission denied" in problems[f"file://{root}/keep"]
    assert "Permission denied" in problems[f"file://{root}/locked.txt"]
    assert urls(search(config, "newword")) == {"new.txt"}
    assert urls(search(config, "second")) == {"mod.txt"} and search(config, "first") == []
    assert search(config, "goneword") == []
    assert urls(search(config, "kiwi")) == {"k1.txt", "k2.txt"}  # folder unreadable: kept
    assert urls(search(config, "before")) == {"locked.txt"}  # unreadable now: old version kept

    healed = crawl(config)
    assert healed.code == 0, healed.stderr
    assert healed.counts["changed"] == 1 and healed.counts["deleted"] == 0
    assert urls(search(config, "after")) == {"locked.txt"}
    assert len(search(config, "extension:txt")) == 10
