"""The Source registry: the built-in sources and one from another distribution, registered under the
entry-point group ``beamtrawl.sources`` (tests/data/memo_source, a ``memo://`` source of in-memory notes,
installed with ``pip install --target`` and put on PYTHONPATH as a user would install it beside beamtrawl),
crawled end to end through discovery rounds, reading and the driver's "nothing changed" check."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.transforms import sources
from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.records import FrontierItem
from beamtrawl.transforms.sources.base import ByHost, ParentUrls, UnchangedState, capable

from tests.conftest import installed_for_crawls

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def memo_path(tmp_path_factory) -> str:
    return installed_for_crawls(tmp_path_factory, "memo_source")


@pytest.fixture
def with_memo(memo_path, monkeypatch):
    """The memo source visible here (sys.path, fresh registry) and to crawl subprocesses (PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([memo_path, str(HERE.parent)]))
    monkeypatch.syspath_prepend(memo_path)
    sources.clear()
    yield
    sys.modules.pop("beamtrawl_memo", None)
    sources.clear()


def memo_config(tmp_path: Path, **settings) -> dict:
    return {"start": [{"url": "memo://book/", "parse": True, "index": False}],
            "index": {"path": str(tmp_path / "index.sqlite")}, "max_delete_ratio": 1.0, **settings}


def test_the_capabilities_of_the_built_in_sources():
    assert sources.schemes()[:6] == ("file", "http", "https", "smb", "imap", "imaps")
    assert [s for s in sources.schemes() if sources.by_host(f"{s}://h/")] == ["http", "https"]
    assert capable(sources.source_for("imap://h/"), UnchangedState)
    assert not capable(sources.source_for("file:///x"), UnchangedState)
    assert capable(sources.source_for("imaps://h/"), ParentUrls) and not capable(sources.source_for("smb://h/"), ParentUrls)
    assert capable(sources.source_for("https://h/"), ByHost)
    assert sources.parent_urls("imap://h/In%20box;UIDVALIDITY=7") == ("imap://h/In%20box",)
    assert sources.parent_urls("file:///srv/a;b") == ()


def test_an_unknown_scheme_is_one_line_naming_the_schemes(tmp_path):
    with pytest.raises(sources.RegistryError, match="no source handles gopher: URLs"):
        sources.source_for("gopher://h/")
    raw = {"start": [{"url": "gopher://h/"}], "index": {"path": str(tmp_path / "i.sqlite")}}
    with pytest.raises(ConfigError, match=r"start\[0\]\.url: scheme 'gopher' is not crawlable; sources: file, http"):
        parse_config(raw, str(tmp_path / "c.yaml"))


def test_a_source_from_another_distribution_registers_its_scheme(with_memo, tmp_path):
    assert "memo" in sources.schemes()
    config = parse_config(memo_config(tmp_path), str(tmp_path / "c.yaml"))  # its start URL is valid
    memo = sources.Sources()("memo://book/")
    assert type(memo).__name__ == "MemoSource" and capable(memo, UnchangedState)
    found = list(memo.expand(FrontierItem("memo://book/", "memo://book/", 0, "memo://book/", [], "", ""),
                             Rules(config), False, None))
    assert sorted(r.url for r in found if r.route == "entries") == [
        "memo://book/birds/puffin.txt", "memo://book/birds/seabirds/fulmar.txt",
        "memo://book/birds/seabirds/gannet.txt", "memo://book/readme.txt", "memo://book/sea/tides.txt"]
    assert memo.open_document("memo://book/sea/tides.txt").read() == b"Spring tides follow the new moon.\n"


def test_a_source_from_another_distribution_is_crawled_end_to_end(with_memo, tmp_path, crawl, search):
    """Three discovery rounds (a walk budget of one entry hands every folder on), reading through the
    source, and on the second crawl the source's unchanged state spares the pipeline."""
    import yaml

    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(memo_config(tmp_path, walk_budget=1, discovery_rounds=3)))
    run = crawl(path)
    assert run.code == 0, run.stderr[-3000:]
    assert (run.counts["new"], run.counts["written"]) == (5, 5)
    assert [hit["url"] for hit in search(path, "gannet")] == ["memo://book/birds/seabirds/gannet.txt"]
    again = crawl(path)
    assert again.code == 0 and "pipeline_skipped" in again.report, again.stderr[-3000:]
    assert again.counts["unchanged"] == 5



def _distribution(folder: Path, name: str, entry_point: str, module: str = "") -> None:
    """A distribution as pip leaves it (a .dist-info folder with METADATA and entry_points.txt)."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[beamtrawl.sources]\n{entry_point}\n")
    if module:
        (folder / f"{name}_mod.py").write_text(module)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Install distributions into a folder on sys.path, with a fresh registry."""
    folder = tmp_path / "site"
    monkeypatch.syspath_prepend(str(folder))
    sources.clear()
    yield folder
    sources.clear()
    for name in [m for m in sys.modules if m.endswith("_mod") and m.startswith("rt")]:
        sys.modules.pop(name)


NOTES = ("class Notes:\n    schemes = ('Notes',)\n    def __init__(self, settings): pass\n"
         "    def expand(self, *a): return iter(())\n    def open_document(self, url): raise OSError('no')\n"
         "class Half:\n    schemes = ('half',)\n")


@pytest.mark.parametrize(("entry_point", "module", "url", "problem"), [
    ("gone = rtgone_mod:X", "", "gone://h/",
     "start[0].url: the source 'gone' (rtgone_mod:X) cannot be loaded: ModuleNotFoundError"),
    ("half = rthalf_mod:Half", NOTES, "half://h/", "start[0].url: rthalf_mod:Half is not a source of half: URLs"),
    ("exits = rtexits_mod:X", "raise SystemExit('bye')", "exits://h/",
     "start[0].url: the source 'exits' (rtexits_mod:X) cannot be loaded: SystemExit: bye"),
])
def test_a_broken_source_from_another_distribution_is_a_configuration_error(installed, tmp_path, entry_point, module,
                                                                            url, problem):
    """Before, a crawl's configuration passed and the source failed on a worker mid-crawl (a SystemExit at
    import ended the process)."""
    name = entry_point.split("= ")[1].split("_mod")[0]
    _distribution(installed, name, entry_point, module)
    raw = {"start": [{"url": url}], "index": {"path": str(tmp_path / "i.sqlite")}}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, str(tmp_path / "c.yaml"))
    assert str(caught.value).startswith(f"{tmp_path / 'c.yaml'}: {problem}")


def test_a_scheme_registered_in_capitals_serves_its_lower_case_urls(installed, tmp_path):
    """URLs carry the scheme in lower case: an entry point ``Notes = …`` was listed and never matched."""
    _distribution(installed, "rtnotes", "Notes = rtnotes_mod:Notes", NOTES)
    raw = {"start": [{"url": "NOTES://h/"}], "index": {"path": str(tmp_path / "i.sqlite")}}
    assert parse_config(raw, str(tmp_path / "c.yaml")).start[0].url.startswith("notes://")
    assert "notes" in sources.schemes() and sources.source_for("notes://h/").__name__ == "Notes"


@pytest.fixture(scope="module")
def rival_paths(tmp_path_factory) -> list[str]:
    return [installed_for_crawls(tmp_path_factory, name) for name in ("rival_sources_a", "rival_sources_b")]


def test_a_claimed_built_in_or_twice_claimed_scheme_is_skipped_and_every_other_source_loads(
        with_memo, rival_paths, monkeypatch, caplog, tmp_path):
    """tests/data/rival_sources_a claims http (built in), quill (its own) and ink, which rival_sources_b claims
    too. Before, the claim on http made every third-party scheme (memo, quill) a configuration error; which of
    two claims on ink won depended on the order of sys.path."""
    for path in rival_paths:
        monkeypatch.syspath_prepend(path)
    sources.clear()
    with caplog.at_level(logging.WARNING, logger="beamtrawl"):
        assert {"memo", "quill"} <= set(sources.schemes()) and "ink" not in sources.schemes()
    assert [record.getMessage() for record in caplog.records] == [
        ("entry point http = beamtrawl_rival_a:Quill (distribution beamtrawl-test-rival-a): skipped: the scheme "
         "'http' is served by a built-in source"),
        ("entry point ink = beamtrawl_rival_a:Quill (distribution beamtrawl-test-rival-a) and entry point ink = "
         "beamtrawl_rival_b:Ink (distribution beamtrawl-test-rival-b) claim the same scheme 'ink': neither is used")]
    assert sources.source_for("http://h/").__name__ == "WebSource"
    assert sources.source_for("quill://h/").__name__ == "Quill"
    config = parse_config({**memo_config(tmp_path), "start": [{"url": "memo://book/"}, {"url": "quill://desk/"}]},
                          str(tmp_path / "c.yaml"))
    assert [s.url for s in config.start] == ["memo://book/", "quill://desk/"]
    with pytest.raises(ConfigError, match=r"start\[0\]\.url: scheme 'ink' is not crawlable; sources: file, http"):
        parse_config({**memo_config(tmp_path), "start": [{"url": "ink://pot/"}]}, str(tmp_path / "c.yaml"))
    for module in ("beamtrawl_rival_a", "beamtrawl_rival_b"):
        sys.modules.pop(module, None)


def test_an_entry_point_whose_name_is_no_scheme_is_skipped_with_a_warning(installed, caplog):
    """Before, names such as ``*``, an empty one, ``mail to`` or ``c`` (a Windows drive: ``C:/docs`` is a path)
    were registered: listed in every "not crawlable" message and answering ``known('*')``."""
    info = installed / "rtodd-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rtodd\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[beamtrawl.sources]\n* = rtodd_mod:Notes\n = rtodd_mod:Notes\n"
                                           "mail to = rtodd_mod:Notes\nc = rtodd_mod:Notes\nx:y = rtodd_mod:Notes\n"
                                           "Notes = rtodd_mod:Notes\n")
    (installed / "rtodd_mod.py").write_text(NOTES)
    with caplog.at_level(logging.WARNING, logger="beamtrawl"):
        assert sources.schemes() == (*sources.BUILTIN, "notes")
    assert not any(sources.known(name) for name in ("*", "", "mail to", "c", "x:y"))
    skipped = sorted(r.getMessage().split(": skipped: ")[1].split(" is not")[0] for r in caplog.records)
    assert skipped == ["''", "'*'", "'c'", "'mail to'", "'x:y'"]
