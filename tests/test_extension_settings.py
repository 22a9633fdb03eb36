"""Issue 29: an extension from another distribution owns its configuration. A real distribution (a .dist-info
folder with entry_points.txt, as pip leaves it, in a site folder put on PYTHONPATH) registers a source with
settings (``memo://``) and an index target with settings (``notebook``): their sections are checked by their
own models, with their own errors, they appear in ``beamtrawl init`` and in the generated reference, and a
crawl from the memo source into the notebook runs and is searchable — beamtrawl itself untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import beamtrawl_command

DISTRIBUTION = "memo_pads"
MODULE = '''
"""Memo pads: a source and an index target from outside beamtrawl."""
import io
import os
from typing import Literal

from beamtrawl.transforms.fields import Count, Path, Section, Text
from beamtrawl.transforms.index.base import TargetSettings
from beamtrawl.transforms.index.sqlite import EmbeddedIndex
from beamtrawl.transforms.records import Entry
from beamtrawl.transforms.urls import doc_id
from pydantic import Field


class MemoSettings(Section):
    """Memo pads: what every memo says."""

    greeting: Text = "hello"
    """the word every memo starts with"""
    memos: Count = Field(2, ge=1, le=10)
    """memos on each pad"""


class MemoSource:
    schemes = ("memo",)
    Settings = MemoSettings

    def __init__(self, settings):
        self.settings = settings

    def expand(self, item, rules, follow_symlinks, budget):
        for number in range(self.settings.of(MemoSource).memos):
            url = f"{item.url.rstrip('/')}/{number}.txt"
            if rules.decide(url, 1, source_url=item.url).index:
                yield Entry(doc_id(url), url, item.root, 1, 32, 1_700_000_000 * 10**9 + number, "", None, "text/plain",
                            [], "", "", item.url, "")

    def open_document(self, url):
        return io.BytesIO(f"{self.settings.of(MemoSource).greeting} from memo {url}".encode())


class LedgerSettings(Section):
    """Ledgers: whose they are."""

    owner: Text
    """who keeps the ledger (no default: the section must say)"""


class LedgerSource(MemoSource):
    schemes = ("ledger",)
    Settings = LedgerSettings


class NotebookSettings(TargetSettings):
    """A notebook: the embedded index kept in a folder of notebooks."""

    kind: Literal["notebook"] = "notebook"
    """a notebook"""
    folder: Path
    """the folder of notebooks"""
    pages: Text = "notes.sqlite"
    """the notebook's file in it"""

    @property
    def label(self):
        return os.path.join(self.folder, self.pages)

    def stem(self, base):
        return os.path.join(self.folder, "notebook")


class Notebook(EmbeddedIndex):
    Settings = NotebookSettings

    @classmethod
    def from_config(cls, section):
        return cls(os.path.join(section.folder, section.pages))
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The distribution installed into a site folder of its own; the environment that puts it on the path."""
    folder = tmp_path_factory.mktemp("site")
    info = folder / f"{DISTRIBUTION}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[beamtrawl.sources]\nmemo = {DISTRIBUTION}:MemoSource\n"
                                           f"ledger = {DISTRIBUTION}:LedgerSource\n\n"
                                           f"[beamtrawl.targets]\nnotebook = {DISTRIBUTION}:Notebook\n")
    (info / "RECORD").write_text("")
    (folder / f"{DISTRIBUTION}.py").write_text(MODULE)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


def run(site: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(beamtrawl_command(*args, check_dac=False), capture_output=True, text=True, env=site,
                          timeout=600, check=False)


@pytest.fixture
def installed(site, monkeypatch):
    """The distribution on this process's path, every registry and the file's model fresh before and after (its
    module stays imported: its models stay subclasses of Section, which tests of the reference read)."""
    from beamtrawl.pipeline.config.schema import crawl_file
    from beamtrawl.transforms import index, sources

    def clear():
        sources.clear()
        index.REGISTRY.clear()
        crawl_file.cache_clear()
    monkeypatch.syspath_prepend(site["PYTHONPATH"].split(os.pathsep)[0])
    clear()
    yield
    clear()


def _config(tmp_path, memo: str = "{greeting: ahoy, memos: 3}", index: str = "") -> str:
    path = tmp_path / "memo.yaml"
    index = index or f"{{kind: notebook, folder: {tmp_path / 'books'}}}"
    path.write_text(f"start: [{{url: 'memo://pad/'}}]\nindex: {index}\nmemo: {memo}\n", encoding="utf-8")
    return str(path)


def test_an_extensions_sections_are_checked_by_its_own_models(installed, tmp_path):
    from beamtrawl.pipeline.config import ConfigError, load_config
    from beamtrawl.transforms.sources.settings import SourceSettings

    config = load_config(_config(tmp_path))
    assert (config.index.kind, config.index.label) == ("notebook", str(tmp_path / "books" / "notes.sqlite"))
    source = sys.modules[DISTRIBUTION].MemoSource
    assert SourceSettings.from_config(config).of(source).greeting == "ahoy"
    wrong = [("{memos: 11}", "", "memo.memos: must be at most 10, got 11"),
             ("{greting: x}", "", "memo.greting: unknown key, did you mean greeting? (allowed: greeting, memos)"),
             ("{}", "{kind: notebook}", "index.folder: is required"),
             ("{}", f"{{kind: notebook, folder: {tmp_path}, path: x}}", "index.path: unknown key")]
    for memo, index, message in wrong:
        with pytest.raises(ConfigError) as caught:
            load_config(_config(tmp_path, memo, index))
        assert message in str(caught.value)
    ledger = tmp_path / "ledger.yaml"  # a section its model requires is asked for though the file leaves it out
    ledger.write_text(f"start: [{{url: 'ledger://book/'}}]\nindex: {{path: {tmp_path / 'l.sqlite'}}}\n")
    with pytest.raises(ConfigError, match="ledger.owner: is required"):
        load_config(str(ledger))


def test_an_extension_appears_in_init_and_in_the_reference(installed):
    from beamtrawl.pipeline.config.reference import reference
    from beamtrawl.pipeline.starter import starter_config

    text = starter_config(["memo://pad/", "ledger://book/"])
    assert "memo:                          # Memo pads: what every memo says." in text
    assert '  # greeting: "hello"' in text and "# the word every memo starts with" in text
    assert "  owner:                        # required: who keeps the ledger" in text
    written = reference()
    assert "| `memo.memos` | integer from 1 to 10 | `2` | memos on each pad |" in written
    assert "## `index` (kind: notebook)" in written and "| `index.folder` | path | required |" in written


def test_an_extension_source_crawls_into_an_extension_target(site, tmp_path):
    """In processes of their own, workers included, as a user runs them."""
    config = _config(tmp_path)
    done = run(site, "crawl", config, "--direct_num_workers=1")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "books" / "notes.sqlite").is_file() and (tmp_path / "books" / "notebook.report.json").is_file()
    found = run(site, "search", "ahoy", "--config", config, "--json")
    assert sorted(hit["url"] for hit in json.loads(found.stdout)) == [f"memo://pad/{n}.txt" for n in range(3)]
