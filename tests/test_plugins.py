"""Crawler plugins: a plugin distribution installed through its entry point records every hook call
of real crawls; loading, ordering, error isolation and the shipped plugins on their own."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.plugins.filesize import FilesizeFilter
from beamtrawl.plugins.hookspecs import hookimpl
from beamtrawl.plugins.link_text_title import LinkTextAsTitle
from beamtrawl.plugins.manager import PluginHost, PluginSpec
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.records import Entry, RawDocument

from tests.conftest import beamtrawl_command, report_path

PLUGIN_SOURCE = Path(__file__).parent / "data" / "recorder_plugin"


@pytest.fixture(scope="module")
def recorder_path(tmp_path_factory):
    """The recorder plugin pip-installed into a folder of its own (beamtrawl itself is not reinstalled);
    crawls find it through PYTHONPATH and its dist-info's entry point."""
    build = tmp_path_factory.mktemp("recorder-src")
    shutil.copytree(PLUGIN_SOURCE, build / "src")
    target = tmp_path_factory.mktemp("recorder-site")
    # Built with the setuptools the test extra installs: pip fetches nothing.
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target), str(build / "src")],
                   check=True, capture_output=True)
    return target


@pytest.fixture
def with_recorder(recorder_path, monkeypatch):
    repo = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(recorder_path), str(repo)]))
    return recorder_path


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def calls(log: list[dict], plugin: str, root: Path) -> Counter:
    """(hook, path below root) → number of calls by ``plugin``."""
    prefix = "file://" + str(root) + "/"
    return Counter((e["hook"], e["url"].removeprefix(prefix)) for e in log if e["plugin"] == plugin)


def recorder(log: Path, name: str, priority: int, **params) -> dict:
    return {"plugin": "recorder", "priority": priority, "params": {"log": str(log), "name": name, **params}}


def test_hooks_of_two_crawls_in_order_with_exact_counts(tmp_path, make_config, crawl, search, with_recorder):
    root = tmp_path / "tree"
    for name, text in {"a.txt": "alpha apples", "b.md": "# Bravo page\n\nbravo bananas", "skip.log": "log lines",
                       "empty.txt": "", "sub/c.txt": "charlie cherries", "sub/secret.txt": "secret plans"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    log = tmp_path / "hooks.jsonl"
    config = make_config(root, blacklist=[{"regex": r".*\.log"}], plugins=[
        # listed first but runs last: higher priority runs first, as for preparators
        recorder(log, "late", -1, fail_in="on_create_index_entry,on_finish_crawling", fail_url=r"/d\.txt$"),
        recorder(log, "early", 5, reject="secret", title_prefix="Recorded: "),
        {"plugin": "filesize_filter", "params": {"min_bytes": 1}},
    ])

    first = crawl(config)
    assert first.code == 0, first.stderr
    entries = read_log(log)
    assert [(e["hook"], e["plugin"]) for e in entries[:2]] == [("on_start_crawling", "early"),
                                                               ("on_start_crawling", "late")]
    assert [(e["hook"], e["plugin"], e["fatal"]) for e in entries[-2:]] == [
        ("on_finish_crawling", "early", ""), ("on_finish_crawling", "late", "")]
    assert calls(entries, "early", root) == Counter({
        ("on_start_crawling", ""): 1,
        **{("check_dynamic_blacklist", u): 1 for u in ("a.txt", "b.md", "empty.txt", "sub", "sub/c.txt",
                                                        "sub/secret.txt")},
        **{("on_accept_url", u): 1 for u in ("a.txt", "b.md", "sub", "sub/c.txt")},
        **{("on_decline_url", u): 1 for u in ("skip.log", "empty.txt", "sub/secret.txt")},
        **{(hook, u): 1 for hook in ("on_before_prepare", "on_after_prepare", "on_create_index_entry")
           for u in ("a.txt", "b.md", "sub/c.txt")},
        ("on_finish_crawling", ""): 1,
    })
    # "late" sees what passed "early" and the file-size filter: the rejected URLs stop at the first True.
    late = calls(entries, "late", root)
    assert late[("check_dynamic_blacklist", "sub/secret.txt")] == 0
    assert late[("check_dynamic_blacklist", "empty.txt")] == 0
    assert late[("on_decline_url", "sub/secret.txt")] == 1
    # Every call of "late" comes after the same call of "early"; per document the hooks run in crawl order.
    seen = set()
    for e in entries:
        key = (e["hook"], e["url"])
        if e["plugin"] == "early":
            seen.add(key)
        else:
            assert key in seen, key
    position = {(e["hook"], e["url"]): n for n, e in enumerate(entries) if e["plugin"] == "early"}
    for name in ("a.txt", "b.md", "sub/c.txt"):
        url = f"file://{root}/{name}"
        order = [position[(hook, url)] for hook in ("on_accept_url", "on_before_prepare", "on_after_prepare",
                                                     "on_create_index_entry")]
        assert order == sorted(order), name
    # on_after_prepare's change is what the index holds; the rejected and the empty file are not indexed.
    created = {e["url"].rsplit("/", 1)[-1]: e["title"] for e in entries
               if e["hook"] == "on_create_index_entry" and e["plugin"] == "late"}
    assert all(title.startswith("Recorded:") for title in created.values()), created
    assert [h["title"] for h in search(config, "bananas")] == ["Recorded: Bravo page"]
    assert search(config, "secret") == [] and search(config, "extension:txt empty") == []
    assert first.counts["declined"] == 3 and first.counts["new"] == 3
    # "late" fails in on_finish_crawling (on the driver): a report line, and the crawl still succeeds.
    assert first.counts["plugin_failed"] == 1
    assert first.problems("plugin:on_finish_crawling") == {
        "": "plugin recorder failed in on_finish_crawling: RuntimeError: late was told to fail in on_finish_crawling"}

    log.unlink()
    (root / "b.md").unlink()
    (root / "sub/c.txt").write_text("charlie cherries, changed", encoding="utf-8")
    os.utime(root / "sub/c.txt", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    (root / "d.txt").write_text("delta dates", encoding="utf-8")

    second = crawl(config)
    assert second.code == 0, second.stderr
    entries = read_log(log)
    assert calls(entries, "early", root) == Counter({
        ("on_start_crawling", ""): 1,
        **{("check_dynamic_blacklist", u): 1 for u in ("a.txt", "d.txt", "empty.txt", "sub", "sub/c.txt",
                                                        "sub/secret.txt")},
        **{("on_accept_url", u): 1 for u in ("a.txt", "d.txt", "sub", "sub/c.txt")},
        **{("on_decline_url", u): 1 for u in ("skip.log", "empty.txt", "sub/secret.txt")},
        **{(hook, u): 1 for hook in ("on_before_prepare", "on_after_prepare", "on_create_index_entry")
           for u in ("d.txt", "sub/c.txt")},  # new and changed only: a.txt is unchanged
        ("on_delete_index_entry", "b.md"): 1,
        ("on_finish_crawling", ""): 1,
    })
    assert entries[-1]["hook"] == "on_finish_crawling"
    assert (second.counts["new"], second.counts["changed"], second.counts["unchanged"],
            second.counts["deleted"]) == (1, 1, 1, 1)
    # "late" failed in on_create_index_entry for d.txt: reported, and the crawl and the document went on.
    assert second.counts["plugin_failed"] == 2  # on_create_index_entry for d.txt, on_finish_crawling
    assert second.problems("plugin:on_create_index_entry") == {
        f"file://{root}/d.txt": "plugin recorder failed in on_create_index_entry: RuntimeError: "
                                "late was told to fail in on_create_index_entry"}
    assert [h["title"] for h in search(config, "dates")] == ["Recorded:"]  # text files have no title


def test_finish_runs_also_when_the_crawl_fails(tmp_path, make_config, crawl, with_recorder):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.txt").write_text("alpha", encoding="utf-8")
    log = tmp_path / "hooks.jsonl"
    index = tmp_path / "index.sqlite"
    index.write_text("this is not an index", encoding="utf-8")  # forces a failure once the crawl started
    config = make_config(root, plugins=[recorder(log, "only", 0)])
    failed = crawl(config)
    assert failed.code == 2
    hooks = [(e["hook"], bool(e.get("fatal"))) for e in read_log(log)]
    assert hooks == [("on_start_crawling", False), ("on_finish_crawling", True)]


def test_a_driver_killed_during_its_deletes_leaves_their_list(tmp_path, make_config, crawl, with_recorder):
    """Deletes are the crawl's last step, in the driver, after the report naming them is written: a crawl killed
    there leaves that list (``deletes_pending``), and the next crawl deletes what is still to delete."""
    root = tmp_path / "tree"
    root.mkdir()
    for name in "abcdef":
        (root / f"{name}.txt").write_text(f"document {name}", encoding="utf-8")
    assert crawl(make_config(root)).code == 0
    for name in "abc":
        (root / f"{name}.txt").unlink()
    log = tmp_path / "hooks.jsonl"
    config = make_config(root, plugins=[recorder(log, "slow", 0, pause_in="on_delete_index_entry", pause=30)])
    driver = subprocess.Popen(beamtrawl_command("crawl", str(config), "--direct_num_workers=2"),
                              cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while not (log.exists() and any(e["hook"] == "on_delete_index_entry" for e in read_log(log))):
            assert driver.poll() is None, "the crawl ended before its deletes"
            time.sleep(0.1)
        (first,) = [e for e in read_log(log) if e["hook"] == "on_delete_index_entry"]
        os.kill(first["pid"], signal.SIGKILL)  # the driver: deletes run there
    finally:
        driver.kill()
        driver.wait()
    pending = json.loads(report_path(config).read_text(encoding="utf-8"))["deletes_pending"]
    assert pending == [f"file://{root}/{name}.txt" for name in "abc"]
    again = crawl(make_config(root))
    assert again.code == 0 and again.report["deleted_urls"] == pending


# -- loading, order and errors, without a crawl ---------------------------------------------------

class Trace:
    def __init__(self, name: str, trace: list, fail: bool = False, title: str = ""):
        self.name, self.trace, self.fail, self.title = name, trace, fail, title

    @hookimpl
    def on_decline_url(self, url):
        self.trace.append(self.name)
        if self.fail:
            raise ValueError("boom")

    @hookimpl
    def on_after_prepare(self, prepared):
        return Prepared(title=prepared.title + self.title) if self.title else None


def _host(*plugins) -> PluginHost:
    specs = [PluginSpec("tests.test_plugins:Trace", priority, (("name", name), ("trace", trace), *extra))
             for name, priority, trace, *extra in plugins]
    return PluginHost(specs).load()


def test_higher_priority_first_ties_in_configuration_order_and_a_failing_plugin_is_isolated():
    trace: list = []
    host = _host(("c", 7, trace), ("a", -3, trace, ("fail", True)), ("b", 0, trace), ("b2", 0, trace))
    host.call("on_decline_url", "file:///x", url="file:///x")
    assert trace == ["c", "b", "b2", "a"]  # "a" raised and the others still ran
    [problem] = host.problems()
    assert (problem.kind, problem.url, problem.stage) == ("plugin_failed", "file:///x", "plugin:on_decline_url")
    assert problem.reason == "plugin tests.test_plugins:Trace failed in on_decline_url: ValueError: boom"
    assert host.problems() == []


def test_chained_results_each_plugin_sees_the_one_before():
    host = _host(("x", 2, [], ("title", "+1")), ("y", 1, [], ("title", "+2")))
    result = host.chain("on_after_prepare", "prepared", Prepared(title="t"), "u",
                        raw_document=None, preparator=None)
    assert result.title == "t+1+2"


class UnknownHook:
    @hookimpl
    def on_fetch(self, url):
        pass


def _plugins(entry) -> str:
    raw = {"start": [{"url": "/srv/docs"}], "index": {"path": "i.sqlite"}, "plugins": [entry]}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "crawl.yaml")
    return str(err.value)


def test_a_prepared_result_of_the_wrong_type_is_named_by_its_field():
    """What a third party's preparator or ``on_after_prepare`` gives is checked before it is used: a title of 7 was
    one report line naming an AttributeError of ``int``; it names the field now."""
    from beamtrawl.transforms.preparators.base import checked

    assert checked(Prepared(title="t", headlines=("a", "b"))).title == "t"
    for bad, message in [(Prepared(title=7), "Prepared.title is int, not str"),
                         (Prepared(content=None), "Prepared.content is NoneType, not str"),
                         (Prepared(headlines="one"), "Prepared.headlines is not a list of strings"),
                         (Prepared(headlines=["a", 2]), "Prepared.headlines is not a list of strings"),
                         ({"title": "t"}, "the preparation gave dict, not Prepared")]:
        with pytest.raises(TypeError, match=re.escape(message)):
            checked(bad)


def test_plugin_configuration_errors_are_one_line():
    assert _plugins({"plugin": "nosuch"}).startswith(
        "crawl.yaml: plugins[0].plugin: no plugin named 'nosuch' (known: filesize_filter, link_text_title")
    assert _plugins({"plugin": "filesize_filter", "params": {"min_bytes": -1}}) == (
        "crawl.yaml: plugins[0].params: min_bytes must be a number of bytes (0 or more), got -1")
    assert _plugins({"plugin": "filesize_filter", "params": {"maximum": 1}}).startswith(
        "crawl.yaml: plugins[0].params: FilesizeFilter.__init__() got an unexpected keyword argument 'maximum'")
    assert _plugins({"plugin": "tests.test_plugins:UnknownHook"}).startswith(
        "crawl.yaml: plugins[0].plugin: unknown hook 'on_fetch'")
    assert _plugins({"plugin": "nosuchmodule.Thing"}).startswith(
        "crawl.yaml: plugins[0].plugin: cannot import nosuchmodule")
    assert _plugins({"plugin": "link_text_title", "params": {"url_patterns": ["(unclosed"]}}).startswith(
        "crawl.yaml: plugins[0].params: url_patterns[0]: missing ), unterminated subpattern")
    assert _plugins({"plugin": "filesize_filter", "priority": "high"}) == (
        "crawl.yaml: plugins[0].priority: must be an integer, got 'high'")
    for message in map(_plugins, ({"plugin": "nosuch"}, {"plugin": "tests.test_plugins:UnknownHook"})):
        assert "\n" not in message
    disabled = {"start": [{"url": "/srv/docs"}], "index": {"path": "i.sqlite"},
                "plugins": [{"plugin": "nosuch", "enabled": False}]}
    assert parse_config(disabled, "crawl.yaml").plugins == ()


def test_filesize_filter_rejects_only_files_outside_the_limits(tmp_path):
    for name, size in {"empty.txt": 0, "small.txt": 5, "big.txt": 50}.items():
        (tmp_path / name).write_bytes(b"x" * size)
    plugin = FilesizeFilter(min_bytes=1, max_bytes=10)
    rejected = {name for name in ("empty.txt", "small.txt", "big.txt")
                if plugin.check_dynamic_blacklist(f"file://{tmp_path}/{name}")}
    assert rejected == {"empty.txt", "big.txt"}
    assert not plugin.check_dynamic_blacklist(f"file://{tmp_path}")  # folders pass
    assert not plugin.check_dynamic_blacklist("https://example.org/empty.txt")  # files only
    with pytest.raises(ValueError):
        FilesizeFilter(min_bytes=10, max_bytes=1)


def test_link_text_becomes_the_title_of_matching_urls():
    plugin = LinkTextAsTitle(url_patterns=[r"\.pdf$"])

    def raw(url: str, link_text: str) -> RawDocument:
        entry = Entry("id", url, "", 0, 1, 0, "", None, "", [], "", "", "https://example.org/", link_text)
        return RawDocument(entry, "application/pdf", b"", "")

    prepared = Prepared(title="Microsoft Word - doc1")
    assert plugin.on_after_prepare(raw("https://example.org/r.pdf", " Annual\n report "), prepared).title == (
        "Annual report")
    assert plugin.on_after_prepare(raw("https://example.org/r.html", "Annual report"), prepared) is None
    assert plugin.on_after_prepare(raw("https://example.org/r.pdf", ""), prepared) is None
