"""The one registry helper behind sources, index targets, preparators, plugins and access controllers: each
finds its built-ins and the entry points of other distributions (a .dist-info folder as pip leaves it, on
sys.path) the same way, with one clash policy and one message."""

from __future__ import annotations

import logging
import sys

import pytest
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.plugins import manager
from beamtrawl.transforms import index, sources
from beamtrawl.transforms.enrich import access
from beamtrawl.transforms.preparators import registry as preparators
from beamtrawl.transforms.registry import Registry, RegistryError

MODULE = """\
class Thing:
    schemes = ('thing',)
    def __init__(self, settings=None, **params): self.params = params
    def expand(self, *a): return iter(())
    def open_document(self, url): raise OSError('no')
    def groups(self, entry): return ['from-entry-point']
    @classmethod
    def from_config(cls, section): return cls(section=section)
def prepare(data, meta): return None
"""

#: Each registry, with a name its built-ins own.
KINDS = {"beamtrawl.sources": (sources.REGISTRY, "http"), "beamtrawl.targets": (index.REGISTRY, "sqlite"),
         "beamtrawl.plugins": (manager.REGISTRY, "filesize_filter"),
         "beamtrawl.access": (access.REGISTRY, "posix")}


def _distribution(folder, name: str, group: str, lines: str) -> None:
    """A distribution as pip leaves it: a .dist-info folder with METADATA and entry_points.txt, and its module."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    (folder / f"{name}.py").write_text(MODULE)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path for distributions, every registry fresh before and after."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def clear():
        sources.clear()
        for registry, _ in KINDS.values():
            registry.clear()
        for module in [m for m in sys.modules if m.startswith("rg_")]:
            sys.modules.pop(module)
    clear()
    yield folder
    clear()


@pytest.mark.parametrize("group", sorted(KINDS))
def test_every_kind_skips_a_claim_on_a_built_in_or_a_twice_claimed_name_with_one_message(site, caplog, group):
    """Before, sources skipped such claims with a warning, preparators stopped the crawl, plugins took
    whichever entry point came first on sys.path and access controllers had no entry points at all."""
    registry, builtin = KINDS[group]
    _distribution(site, "rg_a", group, f"{builtin} = rg_a:Thing\nshared = rg_a:Thing\nthing = rg_a:Thing")
    _distribution(site, "rg_b", group, "shared = rg_b:Thing")
    with caplog.at_level(logging.WARNING, logger="beamtrawl"):
        names = registry.names()
    assert "thing" in names and "shared" not in names and names.count(builtin) == 1
    assert sorted(r.getMessage() for r in caplog.records) == sorted([
        (f"entry point {builtin} = rg_a:Thing (distribution rg_a): skipped: the {registry.noun} {builtin!r} is "
        f"served by a built-in {registry.kind}"),
        (f"entry point shared = rg_a:Thing (distribution rg_a) and entry point shared = rg_b:Thing (distribution "
        f"rg_b) claim the same {registry.noun} 'shared': neither is used")])
    assert registry.load("thing").__name__ == "Thing"
    with pytest.raises(RegistryError) as caught:
        registry.load("shared")
    assert str(caught.value) in [r.getMessage() for r in caplog.records] and "'shared'" in str(caught.value)


def test_a_preparator_claiming_a_built_in_name_is_skipped_and_the_others_load(site, caplog):
    """Before, an entry point named like a built-in preparator made every crawl's configuration fail."""
    _distribution(site, "rg_p", preparators.GROUP, "pdf = rg_p:prepare\nshout = rg_p:prepare")
    with caplog.at_level(logging.WARNING, logger="beamtrawl"):
        found = preparators.registered()
    assert found["shout"].func.__module__ == "rg_p" and found["pdf"].func.__module__ != "rg_p"
    assert caplog.records[0].getMessage() == ("entry point pdf = rg_p:prepare (distribution rg_p): skipped: the "
                                              "name 'pdf' is served by a built-in preparator")


def test_a_preparator_that_cannot_load_is_skipped_naming_its_distribution(site, caplog):
    """Before, one broken distribution's preparator made every crawl's configuration fail."""
    _distribution(site, "rg_b", preparators.GROUP, "gone = rg_b_missing:prepare\nodd = rg_b:MODULE_NUMBER\n"
                                                    "fine = rg_b:prepare")
    (site / "rg_b.py").write_text(MODULE + "MODULE_NUMBER = 7\n")
    with caplog.at_level(logging.WARNING, logger="beamtrawl"):
        found = preparators.registered()
    assert "fine" in found and "gone" not in found and "odd" not in found
    said = [record.getMessage() for record in caplog.records]
    assert said == [("the preparator 'gone' (rg_b_missing:prepare) cannot be loaded: ModuleNotFoundError: No module "
                    "named 'rg_b_missing' (distribution rg_b): skipped"),
                    ("entry point odd = rg_b:MODULE_NUMBER (distribution rg_b) is neither a PreparatorSpec nor a "
                    "function: skipped")], said


def test_an_access_controller_from_an_entry_point_is_named_in_class(site, tmp_path):
    _distribution(site, "rg_c", "beamtrawl.access", "stamp = rg_c:Thing")
    raw = {"start": [{"url": str(tmp_path)}], "index": {"path": str(tmp_path / "i.sqlite")},
           "access_control": [{"class": "stamp", "params": {"level": 2}}]}
    controller = parse_config(raw, str(tmp_path / "c.yaml")).access_control[0]
    assert controller.groups(None) == ["from-entry-point"] and controller.build().params == {"level": 2}
    with pytest.raises(ConfigError, match=r"access_control\[0\]\.class: no access controller named 'stamp2' "
                                          r"\(known: url_rules, posix, stamp\)"):
        parse_config({**raw, "access_control": [{"class": "stamp2"}]}, str(tmp_path / "c.yaml"))


def test_a_plugin_and_an_index_target_load_from_entry_points(site):
    _distribution(site, "rg_t", "beamtrawl.targets", "notebook = rg_t:Thing")
    _distribution(site, "rg_g", "beamtrawl.plugins", "greeter = rg_g:Thing")
    assert index.REGISTRY.load("notebook").from_config("section").params == {"section": "section"}
    assert manager.instantiate(manager.PluginSpec("greeter", 0, (("hello", 1),))).params == {"hello": 1}


def test_a_built_in_name_is_found_without_reading_entry_points(monkeypatch):
    """Reading the entry points costs 100 ms of a command's start: a built-in does not pay it."""
    registry = Registry("thing", "beamtrawl.nothing", {"one": "json:dumps"})
    monkeypatch.setattr("beamtrawl.transforms.registry.entry_points", None)
    assert registry.known("one") and registry.load("one").__name__ == "dumps"
