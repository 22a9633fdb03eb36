"""The ``preparators:`` and ``preparation:`` sections: instances, overrides, several instances of one
preparator, the catch-all switch, one-line errors, and a fingerprint that follows the configuration."""

from __future__ import annotations

import pytest
import yaml
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.pipeline.crawl import preparation_fingerprint
from beamtrawl.transforms.preparators import BUILTIN, chain_for
from beamtrawl.transforms.preparators.isolation import Bounds

BASE = {"start": [{"url": "file:///srv/docs"}], "index": {"path": "/tmp/x.sqlite"}}


def load(**top):
    return parse_config({**BASE, **top}, "crawl.yaml")


def error(**top) -> str:
    with pytest.raises(ConfigError) as caught:
        load(**top)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("crawl.yaml: ")
    return message.removeprefix("crawl.yaml: ")


def names(config) -> list[str]:
    return [p.name for p in config.preparators]


def test_without_configuration_every_builtin_runs_and_external_waits_for_a_command():
    config = load()
    assert names(config) == [p.name for p in BUILTIN] and "external" not in names(config)
    assert config.preparation == Bounds(timeout=60.0, memory_limit=4 * 1024**3, isolate=True,
                                        max_content_length=10_000_000)


def test_catch_all_is_on_by_default_and_can_be_switched_off():
    unknown = ("application/x-executable", "file:///a.out")
    assert chain_for(load().preparators, *unknown)[0].name == "metadata_only"
    config = load(preparators=[{"name": "metadata_only", "enabled": False}])
    assert "metadata_only" not in names(config) and chain_for(config.preparators, *unknown) == []


def test_a_builtin_is_changed_in_place():
    config = load(preparators=[{"name": "pdf", "priority": 50, "url_pattern": r"/manuals/"},
                               {"name": "html", "enabled": False}])
    pdf = next(p for p in config.preparators if p.name == "pdf")
    assert pdf.priority == 50 and pdf.url_pattern.pattern == "/manuals/" and "html" not in names(config)
    # the URL pattern overrides the MIME types, as in regain: a search anywhere in the URL
    assert [p.name for p in chain_for(config.preparators, "text/plain", "file:///srv/manuals/a.txt")] == [
        "pdf", "text"]
    assert not pdf.accepts("application/pdf", "file:///srv/other/a.pdf")


def test_several_instances_of_one_preparator():
    config = load(preparators=[
        {"name": "postscript", "preparator": "external", "url_pattern": r"\.ps$",
         "params": {"command": "cat ${filename}", "timeout": 5}},
        {"name": "dvi", "preparator": "external", "mime_types": ["application/x-dvi"],
         "params": {"command": "cat ${filename}", "check_exit_code": False}},
        {"name": "small_archives", "preparator": "archive", "url_pattern": r"/small/", "priority": 20,
         "params": {"max_entries": 10}},
    ])
    by_name = {p.name: p for p in config.preparators}
    assert dict(by_name["postscript"].params)["timeout"] == 5.0
    assert dict(by_name["dvi"].params) == {"command": "cat ${filename}", "timeout": 60.0, "check_exit_code": False,
                                          "max_output_bytes": 64 * 1024**2}
    assert dict(by_name["small_archives"].params)["max_entries"] == 10
    assert dict(by_name["archive"].params)["max_entries"] == 10_000  # the built-in instance keeps its defaults
    assert by_name["dvi"].preparator == "external" and by_name["dvi"].func is by_name["postscript"].func


@pytest.mark.parametrize("entries, problem", [
    ([{"name": "pfd"}], ("preparators[0].name: unknown preparator 'pfd', did you mean pdf? (known: access, archive, "
                        "audio, chm, code, dbf, encrypted, epub, external, html, hwp, image, info, iwork, java_class, "
                        "legacy_office, mail, man, markdown, matlab, mbox, metadata_only, metafile, mif, odf, office, ")),
    ([{"name": "x", "preparator": "nope"}], "preparators[0].preparator: unknown preparator 'nope'"),
    ([{"name": "pdf", "enabled": "yes"}], "preparators[0].enabled: must be true or false, got 'yes'"),
    ([{"name": "pdf", "colour": 1}], ("preparators[0].colour: unknown key (allowed: enabled, mime_types, name, "
                                     "params, preparator, priority, url_pattern)")),
    ([{"name": "archive", "params": {"max_entrys": 5}}],
     "preparators[0].params.max_entrys: unknown key (allowed: max_bytes, max_entries, max_ratio, max_scan_bytes)"),
    ([{"name": "archive", "params": {"max_entries": "many"}}],
     "preparators[0].params.max_entries: must be an integer, got 'many'"),
    ([{"name": "pdf", "params": {"password": "x"}}], "preparators[0].params.password: unknown key (allowed: )"),
    ([{"name": "pdf", "params": {"ocr": {"dpi": 5}}}], "preparators[0].params.ocr: is set in the crawl file's own ocr: section"),
    ([{"name": "pdf", "url_pattern": "(unclosed"}],
     "preparators[0].url_pattern: missing ), unterminated subpattern at position 0"),
    ([{"name": "pdf"}, {"name": "pdf"}], "preparators[1].name: 'pdf' is configured twice"),
    ([{"name": "html", "preparator": "external"}],
     "preparators[0].name: 'html' is the html preparator's instance; give the new instance another name"),
    ([{"name": "ps", "preparator": "external", "url_pattern": "x"}],
     "preparators[0].params.command: is required, e.g. 'ps2ascii ${filename}' in the configuration"),
    ([{"name": "ps", "preparator": "external", "url_pattern": "x", "params": {"command": "cat a.ps"}}],
     ("preparators[0].params.command: must contain ${filename}, where the "
     "document's path goes")),
    ([{"name": "ps", "preparator": "external", "url_pattern": "x",
       "params": {"command": "no-such-program-here ${filename}"}}],
     "preparators[0].params.command: program 'no-such-program-here' not found on PATH"),
    ([{"name": "ps", "preparator": "external", "url_pattern": "x", "params": {"command": "cat '${filename}"}}],
     "preparators[0].params.command: No closing quotation"),
    ([{"name": "ps", "preparator": "external", "params": {"command": "cat ${filename}"}}],
     "preparators[0]: accepts nothing: give url_pattern or mime_types"),
    ([{"name": "pdf", "mime_types": ["pdf"]}],
     "preparators[0].mime_types[0]: 'pdf' is not a MIME type such as text/html or text/*"),
    ({"name": "pdf"}, "preparators: must be a list, got a mapping"),
])
def test_configuration_mistakes_are_one_line(entries, problem):
    assert error(preparators=entries).startswith(problem)


@pytest.mark.parametrize("section, problem", [
    ({"timeout": 0}, "preparation.timeout: must be a positive number of seconds up to 31536000 (a year), got 0"),
    ({"memory_limit": "1 MiB"}, "preparation.memory_limit: must be 0 (no limit) or at least 256 MiB"),
    ({"memory_limit": "lots"}, "preparation.memory_limit: must be a positive size"),
    ({"isolate": 1}, "preparation.isolate: must be true or false, got 1"),
    ({"max_content_length": 0}, "preparation.max_content_length: must be at least 1, got 0"),
    ({"timout": 5}, "preparation.timout: unknown key, did you mean timeout? (allowed: isolate, max_content_length, memory_limit, timeout)"),
])
def test_preparation_mistakes_are_one_line(section, problem):
    assert error(preparation=section).startswith(problem)


def test_preparation_bounds():
    config = load(preparation={"timeout": 2.5, "memory_limit": "1 GiB", "isolate": False,
                               "max_content_length": 1000})
    assert config.preparation == Bounds(2.5, 1024**3, False, 1000)
    assert load(preparation={"memory_limit": 0}).preparation.memory_limit == 0


def test_the_fingerprint_follows_the_preparator_configuration():
    def fingerprint(**top):
        config = load(**top)
        return preparation_fingerprint(config.preparators, config)

    plain = fingerprint()
    assert fingerprint() == plain
    variants = [
        fingerprint(preparators=[{"name": "pdf", "priority": 11}]),
        fingerprint(preparators=[{"name": "pdf", "enabled": False}]),
        fingerprint(preparators=[{"name": "metadata_only", "enabled": False}]),
        fingerprint(preparators=[{"name": "archive", "params": {"max_entries": 5}}]),
        fingerprint(preparators=[{"name": "pdf", "url_pattern": r"\.pdf$"}]),
        fingerprint(preparators=[{"name": "t", "preparator": "text", "url_pattern": r"\.log$"}]),
        fingerprint(preparation={"max_content_length": 5}),
        fingerprint(ocr={"languages": ["eng", "deu"]}),
        fingerprint(ocr={"enabled": False}),
    ]
    assert len({plain, *variants}) == len(variants) + 1
    assert fingerprint(preparation={"timeout": 5}) == plain  # a bound, not what a document becomes
    assert fingerprint(ocr={"page_timeout": 5, "cache_entries": 10}) == plain
    assert fingerprint(work_dir="elsewhere") == plain  # the OCR cache's place


def test_yaml_example_from_the_module_documentation():
    import beamtrawl.pipeline.config.preparators as module

    example = module.__doc__.split("::", 1)[1].split("\n\n")[1]
    section = yaml.safe_load("\n".join(line[4:] for line in example.splitlines()))
    section["preparators"][1]["params"]["command"] = "cat ${filename}"  # ps2ascii need not be installed
    config = load(**section)
    assert "metadata_only" not in names(config) and names(config)[-1] == "postscript"
