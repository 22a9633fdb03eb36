"""A helper program a preparator needs (mandoc for man pages): a crawl without it says so once in the
summary, with the package and the number of pages; the first crawl after it is installed prepares those
pages again; ``crawl --reprepare`` prepares everything again. The pages are coreutils' own (Debian)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.package_files import debian_file

PAGES = ("ls.1.gz", "cat.1.gz", "sort.1.gz")


def _path_without(program: str, folder: Path) -> str:
    """A PATH that finds every program the machine has but ``program``: a folder of links."""
    folder.mkdir()
    for place in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(place):
            continue
        for name in os.listdir(place):
            link = folder / name
            if name != program and not link.exists() and os.access(os.path.join(place, name), os.X_OK):
                link.symlink_to(os.path.join(place, name))
    return str(folder)


@pytest.fixture
def no_mandoc(tmp_path, monkeypatch) -> Path:
    """The crawls of this test find no mandoc until it is linked into the returned folder."""
    assert shutil.which("mandoc"), "mandoc is missing: tests/run.sh installs it"
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", _path_without("mandoc", folder))
    return folder


def test_missing_helper_is_one_warning_and_healed_once_installed(tmp_path, make_config, crawl, search, no_mandoc):
    real_mandoc = shutil.which("mandoc", path=os.environ["PATH"].replace(str(no_mandoc), "/usr/bin"))
    root = tmp_path / "man"
    root.mkdir()
    for page in PAGES:
        (root / page).write_bytes(debian_file("coreutils", f"usr/share/man/man1/{page}").read_bytes())
    (root / "notes.txt").write_text("a note beside the pages\n")
    config = make_config(root)

    first = crawl(config)
    assert first.code == 0, first.stderr
    warning = ("mandoc is not installed (Debian package mandoc): 3 manual pages prepared without it; the first "
               "crawl after it is installed prepares them again")
    assert [w for w in first.report["warnings"] if "mandoc" in w] == [warning]
    assert f"warning: {warning}" in first.stderr + first.stdout
    assert [h["title"] for h in search(config, '"list directory contents"')] == ["ls.1.gz"]  # roff read as text: no title but the name

    same = crawl(config)  # still missing: nothing prepared again
    assert same.counts["unchanged"] == 4 and same.counts["prepared"] == 0

    (no_mandoc / "mandoc").symlink_to(real_mandoc)
    healed = crawl(config)
    assert healed.code == 0 and not [w for w in healed.report["warnings"] if "mandoc" in w]
    assert healed.counts["changed"] == 4  # the fingerprint holds the helper: every document, pages included
    assert [h["title"] for h in search(config, '"list directory contents"')] == ["ls - list directory contents"]

    assert crawl(config).counts["prepared"] == 0
    again = crawl(config, "--reprepare")
    assert again.code == 0 and again.counts["changed"] == 4 and again.counts["prepared"] == 4
    assert crawl(config).counts["prepared"] == 0  # --reprepare leaves no trace for the next crawl
