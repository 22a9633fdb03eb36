"""A beamtrawl plugin for tests: appends one JSON line per hook call to ``log``.

Installed through its entry point (group ``beamtrawl.plugins``, name ``recorder``). It imports
nothing from beamtrawl, as a third-party plugin would: pluggy's marker is all it needs. Params:
``log`` (the file), ``name`` (written on every line), ``title_prefix`` (on_after_prepare prepends it
to the title), ``reject`` (a regex: check_dynamic_blacklist rejects matching URLs), ``fail_in``
(comma-separated hooks that raise for URLs matching ``fail_url``; driver hooks, which have no URL,
always raise), ``pause_in`` (comma-separated hooks that sleep ``pause`` seconds after recording, so a test
can act in the middle of them).
"""

import dataclasses
import json
import os
import re
import time

import pluggy

hookimpl = pluggy.HookimplMarker("beamtrawl")


class Recorder:
    def __init__(self, log, name="recorder", title_prefix="", reject=None, fail_in="", fail_url="", pause_in="",
                 pause=0.0):
        self.log, self.name, self.title_prefix = log, name, title_prefix
        self.pause_in, self.pause = set(pause_in.split(",")), float(pause)
        self.reject = re.compile(reject) if reject else None
        self.fail_in, self.fail_url = set(fail_in.split(",")), re.compile(fail_url or ".")

    def _record(self, hook, url="", **extra):
        line = json.dumps({"plugin": self.name, "hook": hook, "url": url, "pid": os.getpid(), **extra})
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())  # one write of one line: appends never interleave
        finally:
            os.close(fd)
        if hook in self.pause_in:
            time.sleep(self.pause)
        if hook in self.fail_in and (not url or self.fail_url.search(url)):
            raise RuntimeError(f"{self.name} was told to fail in {hook}")

    @hookimpl
    def on_start_crawling(self, config):
        self._record("on_start_crawling", starts=[s.url for s in config.start])

    @hookimpl
    def check_dynamic_blacklist(self, url, source_url, source_link_text):
        rejected = bool(self.reject and self.reject.search(url))
        self._record("check_dynamic_blacklist", url, source_url=source_url, rejected=rejected)
        return rejected

    @hookimpl
    def on_accept_url(self, url, job):
        self._record("on_accept_url", url, parse=job.parse, index=job.index)

    @hookimpl
    def on_decline_url(self, url):
        self._record("on_decline_url", url)

    @hookimpl
    def on_before_prepare(self, raw_document, preparator):
        self._record("on_before_prepare", raw_document.entry.url, preparator=preparator.name)

    @hookimpl
    def on_after_prepare(self, raw_document, preparator, prepared):
        self._record("on_after_prepare", raw_document.entry.url, preparator=preparator.name)
        if self.title_prefix:
            return dataclasses.replace(prepared, title=self.title_prefix + prepared.title)
        return None

    @hookimpl
    def on_create_index_entry(self, doc, index):
        self._record("on_create_index_entry", doc.url, title=doc.title)

    @hookimpl
    def on_delete_index_entry(self, doc, index):
        self._record("on_delete_index_entry", doc.url)

    @hookimpl
    def on_finish_crawling(self, config, report):
        self._record("on_finish_crawling", fatal=report.get("fatal", ""))
