"""The configuration's one owner: the schema is the only home of a default, every section refuses unknown
keys, the reference in the docs is generated from it, and ``transforms/`` never reaches up into ``pipeline/``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from beamtrawl.pipeline.config import ConfigError, load_config
from beamtrawl.pipeline.config.reference import field_docs, reference, sections
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_module_of_transforms_imports_pipeline():
    offenders = [f"{path.relative_to(ROOT)}: {name}" for path in sorted((ROOT / "transforms").rglob("*.py"))
                 for name in _imports(path) if name.split(".")[:2] in (["beamtrawl", "pipeline"], ["pipeline"])]
    assert offenders == []


def test_the_shared_values_import_only_the_url_rules():
    project = [n for n in _imports(ROOT / "transforms" / "values.py") if n.startswith(("beamtrawl", "pipeline"))]
    assert project == ["beamtrawl.transforms.urls"]


def test_searching_reads_the_configuration_without_the_preparators(tmp_path):
    """A search checks the whole file but builds no preparator instance, so it imports no format library:
    pydantic's cost is more than paid back (bench/startup_bench.py)."""
    path = tmp_path / "crawl.yaml"
    path.write_text('start: [{url: "/srv"}]\nindex: {path: i.sqlite}\npreparators: [{name: pdf, priority: 5}]\n')
    code = ("import sys; from beamtrawl.pipeline.config import load_config; "
            f"config = load_config({str(path)!r}, crawling=False); "
            "sys.exit(config.preparators != () or 'beamtrawl.transforms.preparators' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    assert [p.priority for p in load_config(str(path)).preparators if p.name == "pdf"] == [5]


def test_the_committed_reference_is_the_generated_one():
    committed = (ROOT / "docs" / "configuration-reference.md").read_text(encoding="utf-8")
    assert committed == reference(), ("docs/configuration-reference.md is stale: run "
                                      "python -m beamtrawl.pipeline.config.reference > docs/configuration-reference.md")


def test_every_section_refuses_unknown_keys_and_documents_every_key():
    found = sections()
    assert len(found) >= 15  # the top level, http, smb, imap, index, preparators, plugins, access, aux fields…
    for section in found.values():
        assert section.model_config["extra"] == "forbid" and section.model_config["frozen"], section
        assert [key for key, line in field_docs(section).items() if not line] == [], section


def test_the_loader_writes_no_default_of_its_own():
    """No ``.get(key, literal)`` in the configuration package (the reference reads JSON Schema, not a
    configuration): a default lives in the schema."""
    for path in sorted(set((ROOT / "pipeline" / "config").glob("*.py")) - {ROOT / "pipeline/config/reference.py"}):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and len(node.args) == 2
                 and isinstance(node.args[1], ast.Constant) and node.args[1].value not in (None, "")]
        assert calls == [], f"{path.name}: line {calls[0].lineno}" if calls else ""


@pytest.mark.parametrize(("section", "problem"), [
    ("http: {delay: 1, colour: red}", "http.colour: unknown key (allowed: block_private_addresses, "),
    ("preparation: {timeout: 5, colour: red}", "preparation.colour: unknown key (allowed: isolate, "),
    ("access_control: [{posix: {colour: red}}]", "access_control[0].posix.colour: unknown key"),
    ("auxiliary_fields: [{name: a, regex: b, colour: red}]", "auxiliary_fields[0].colour: unknown key"),
    ("plugins: [{plugin: filesize_filter, colour: red}]", "plugins[0].colour: unknown key"),
    ("credentials: [{url: 'https://h/', username: u, password: p, colour: red}]", "credentials[0].colour: unknown key"),
])
def test_unknown_keys_are_named_in_every_section(tmp_path, section, problem):
    path = tmp_path / "crawl.yaml"
    path.write_text(f'start: [{{url: "/srv"}}]\nindex: {{path: i.sqlite}}\n{section}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value).startswith(f"{path}: {problem}")


def test_sections_keep_their_names_types_and_defaults_for_the_stages(tmp_path):
    path = tmp_path / "crawl.yaml"
    path.write_text('start: [{url: "/srv"}]\nindex: {path: i.sqlite}\nhttp: {max_body: 2 MiB}\n', encoding="utf-8")
    config = load_config(str(path))
    assert config.section("http").max_body == 2 * 1024**2
    assert (config.section("http").delay, config.section("smb").read_acls, config.section("imap").starttls, config.preparation.timeout) == (
        1.0, True, True, 60.0)
    with pytest.raises(ValidationError):  # frozen, as the dataclasses were
        config.section("http").delay = 5


def test_every_documented_default_is_what_the_loader_gives(tmp_path):
    """Writing a key's documented default changes nothing (``whitelist: []`` was documented and refused every
    start URL; sections and mappings showed no default at all)."""
    import re

    import yaml

    rows = re.findall(r"^\| `([a-z_.]+)` \| [^|]* \| ([^|]*) \|", reference(), re.MULTILINE)
    assert [key for key, default in rows if not default.strip()] == []
    base = {"start": [{"url": "/srv"}], "index": {"path": "i.sqlite"}}
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(base))
    plain = load_config(str(path))
    for key, default in rows:
        literal = re.fullmatch(r"`(.*)`", default.strip())
        if key.startswith(("index.", "embeddings.")) or not literal:  # a kind's or model's own keys
            continue
        raw = yaml.safe_load(yaml.safe_dump(base))
        *parents, name = key.split(".")
        node = raw
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = yaml.safe_load(literal.group(1))
        path.write_text(yaml.safe_dump(raw))
        assert load_config(str(path)) == plain, key


def test_every_built_in_source_section_has_a_default_for_every_key():
    """A section a file leaves out is its model's defaults (SourceSettings.of): a built-in may require nothing."""
    from beamtrawl.transforms.sources import settings_sources
    from beamtrawl.transforms.sources.settings import SourceSettings

    found = settings_sources()
    assert sorted(found) == ["az", "gs", "http", "imap", "s3", "smb"]
    for kind in found.values():
        assert SourceSettings().of(kind) == kind.Settings()
