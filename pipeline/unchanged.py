"""A crawl that needs no pipeline, because nothing it would read can have changed.

Before a crawl the driver asks the sources for a summary of their state: the UnchangedState capability
of a source (transforms/sources/base.py). Of the built-in sources only IMAP can give one cheaply: the
folders a crawl lists and, for each, STATUS (UIDVALIDITY, UIDNEXT, MESSAGES). A message added or removed
changes it. File trees, shares and web sites must be listed or asked page by page, which is the
pipeline's own work, so a crawl with a start URL whose source has no such state always runs it.

The summary is taken before the pipeline runs. It is stored in the index only after a crawl that
ended clean (exit code 0), with a key of the whole configuration and the preparation fingerprint, and
with the index's document count. So whatever changes during a crawl shows at the next check. The
state is forgotten before every pipeline run, so a crawl killed half-way leaves none. When the next
crawl finds the same summary, key and count, the index already holds what the pipeline would write:
it is not run, and the report says why.

Plugins that decide on URLs (accept, decline, dynamic blacklist) and access controllers of one's own
may answer differently from one crawl to the next; with them every crawl runs its pipeline.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re

from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.enrich.access import CustomController
from beamtrawl.transforms.sources import Sources, source_for
from beamtrawl.transforms.sources.base import UnchangedState, capable
from beamtrawl.transforms.sources.settings import SourceSettings

log = logging.getLogger("beamtrawl")

_URL_HOOKS = ("check_dynamic_blacklist", "on_accept_url", "on_decline_url")


def sources_state(config, fingerprint: str) -> dict | None:
    """``{"key": …, "folders": {container URL: [numbers …, documents]}}`` now (IMAP: [UIDVALIDITY,
    UIDNEXT, MESSAGES] per folder), or None when a start URL's source cannot tell cheaply, an answer may
    change by itself, or a server fails (the pipeline then runs and reports the failure)."""
    rules = Rules(config)
    starts = [s.url for s in rules.seeds()]
    if (any(isinstance(c, CustomController) for c in config.access_control)
            or any(rules.plugins.implements(hook) for hook in _URL_HOOKS)):
        return None
    sources = Sources(SourceSettings.from_config(config))
    folders: dict[str, list[int]] = {}
    try:
        if not all(capable(source_for(url), UnchangedState) for url in starts):
            return None
        for url in starts:
            folders.update(sources(url).unchanged_state(url, rules))
    except Exception as err:  # noqa: BLE001 - any failure here only means: run the pipeline
        log.debug("the sources' state could not be read (%s); the pipeline runs", err)
        return None
    return {"key": _key(config, fingerprint), "folders": folders}


def matches(stored: dict | None, state: dict, documents: int) -> bool:
    """Would the pipeline find exactly what the last clean crawl left in an index of ``documents``?"""
    return stored == {**state, "documents": documents}


def messages(state: dict) -> int:
    """How many documents the sources hold (the last number of each container's state)."""
    return sum(numbers[-1] for numbers in state["folders"].values())


def _key(config, fingerprint: str) -> str:
    settings = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                if f.name not in ("source", "preparators")}  # preparators are in the fingerprint
    text = json.dumps([fingerprint, _plain(settings)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(value):
    """``value`` as JSON data, the same in every process (reprs hold addresses); passwords left out."""
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name != "password"}
        return [type(value).__name__, _plain(fields)]
    if isinstance(value, re.Pattern):
        return [value.pattern, value.flags]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return [type(value).__qualname__, _plain({k: v for k, v in vars(value).items() if not k.startswith("_")})]
