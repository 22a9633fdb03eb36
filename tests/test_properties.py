"""Property-based tests (hypothesis): URL normalisation, the accept rules and the configuration loader
hold their contracts for any input, not only for the examples written down elsewhere."""

from __future__ import annotations

import os
import re
import tempfile
from urllib.parse import urlsplit

import yaml
from beamtrawl.pipeline.config import ConfigError, load_config, parse_config
from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.sources.file import path_to_url, url_to_path
from beamtrawl.transforms.urls import doc_id, is_under, normalize_url
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_segment = st.text(st.characters(codec="utf-8", exclude_characters="/?#\x00"), max_size=8)
_host = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,10}(\.[A-Za-z]{2,5}){1,2}", fullmatch=True)
_query = st.lists(st.tuples(st.text("abcxyz%7e~ ", max_size=4), st.text("0123%2f/ &", max_size=4)),
                  max_size=3).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))


@st.composite
def web_urls(draw) -> str:
    scheme = draw(st.sampled_from(["http", "HTTP", "https", "HttpS"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    segments = draw(st.lists(st.one_of(_segment, st.sampled_from([".", "..", "%7E", "%2f", "%41"])),
                             max_size=6))
    query = draw(_query)
    fragment = draw(st.sampled_from(["", "#top", "#a/b?c"]))
    return f"{scheme}://{draw(_host)}{port}/{'/'.join(segments)}{'?' + query if query else ''}{fragment}"


@PROPERTIES
@given(web_urls())
def test_normalize_url_is_idempotent_and_canonical(url):
    once = normalize_url(url)
    assert normalize_url(once) == once
    parts = urlsplit(once)
    assert parts.scheme in ("http", "https")
    assert parts.netloc == parts.netloc.lower()
    assert parts.fragment == "" and "#" not in once
    assert not parts.netloc.endswith({"http": ":80", "https": ":443"}[parts.scheme])  # default port dropped
    assert "/./" not in parts.path and "/../" not in parts.path
    assert not re.search("%(?:[a-f][0-9a-fA-F]|[0-9A-F][a-f])", once)  # escapes upper-cased
    assert doc_id(once) == doc_id(normalize_url(once)) and len(doc_id(once)) == 32


@PROPERTIES
@given(st.lists(st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b
                                                          and b not in (b".", b"..")),
                min_size=1, max_size=4))
def test_any_file_name_round_trips_through_its_url(names):
    path = os.fsdecode(b"/" + b"/".join(names))
    url = path_to_url(path)
    assert url_to_path(url) == path
    assert normalize_url(url) == url
    assert is_under(url, "file:///")


_prefixes = st.sampled_from(["file:///srv/", "file:///srv/docs", "file:///srv/docs/x", "file:///other/"])
_file_urls = st.tuples(st.sampled_from(["file:///srv/", "file:///srv/docs/", "file:///srv/docsx/",
                                        "file:///srv/docs/x/private/", "file:///other/"]),
                       st.sampled_from(["a.txt", "b.tmp", "x", "private/c.html"])).map("".join)


@st.composite
def rule_sets(draw) -> dict:
    entries = [*draw(st.lists(_prefixes, max_size=3)), "file:///srv/"]  # the start URL must be whitelisted
    whitelist = [{"prefix": p, "parse": draw(st.booleans()), "index": draw(st.booleans())} for p in entries]
    blacklist = [{"regex": r} for r in draw(st.lists(st.sampled_from([".*\\.tmp", ".*/private/.*",
                                                                     "file:///other/.*"]), max_size=2))]
    return {"start": [{"url": "file:///srv/"}], "index": {"path": "/tmp/properties.sqlite"},
            "whitelist": whitelist, "blacklist": blacklist, "max_depth": draw(st.sampled_from([None, 0, 2]))}


@PROPERTIES
@given(rule_sets(), _file_urls, st.integers(0, 5))
def test_accept_decision_follows_regains_rule(raw, url, depth):
    decision = Rules(parse_config(raw, "/tmp/properties.yaml")).decide(url, depth)
    first = next((w for w in raw["whitelist"] if url.startswith(w["prefix"])), None)
    blacklisted = any(re.fullmatch(b["regex"], url) for b in raw["blacklist"])
    too_deep = raw["max_depth"] is not None and depth > raw["max_depth"]
    expected = first is not None and not blacklisted and not too_deep and (first["parse"] or first["index"])
    assert decision.accepted == expected, decision.reason
    if decision.accepted:  # the first matching whitelist entry gives the flags
        assert (decision.parse, decision.index) == (first["parse"], first["index"])
    else:
        assert decision.reason


_yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**7), st.floats(allow_nan=False, width=32),
              st.text(max_size=12), st.sampled_from(["${HOME}", "${NOT_SET_ANYWHERE}", "10 MiB", "(", "corpus"])),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.sampled_from(
                                   ["url", "prefix", "regex", "parse", "index", "path", "name", "username",
                                    "password", "x"]), children, max_size=3)),
    max_leaves=8)
_top_keys = st.sampled_from(["start", "whitelist", "blacklist", "index", "report", "max_depth", "max_file_size",
                             "max_failed_ratio", "walk_budget", "url_cleaners", "credentials", "follow_symlinks",
                             "unknown_key"])


@PROPERTIES
@given(st.dictionaries(_top_keys, _yaml_values, max_size=6), st.booleans())
def test_configuration_loader_gives_a_config_or_one_line_error(top, with_valid_core):
    if with_valid_core:
        top = {"start": [{"url": "corpus"}], "index": {"path": "i.sqlite"}, **top}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "crawl.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(top, handle)
        try:
            config = load_config(path)
        except ConfigError as err:
            message = str(err)
            assert message.startswith(f"{path}: ") and "\n" not in message
        else:
            assert config.start and config.index.label
