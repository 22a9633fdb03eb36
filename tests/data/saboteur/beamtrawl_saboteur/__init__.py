"""Parts that fail on purpose, installed through entry points as a third party's would be.

* preparator ``crash`` (``.crash`` files): its process dies of a segmentation fault, as a parser written
  in C may (a preparing child's exit 139).
* plugin ``saboteur`` (params ``hook``, ``url``, ``how``): for URLs matching ``url``, the named hook
  answers with a value the next step cannot use, as a buggy plugin might: a field that is no text or no
  number (``how: type``), or a content hash of 40,000 characters, more than an OpenSearch keyword takes
  (``how: huge``).
* access controller ``beamtrawl_saboteur:Gatekeeper`` (param ``url``): raises for matching URLs.
"""

import dataclasses
import os
import re
import signal

import pluggy
from beamtrawl.transforms.preparators import PreparatorSpec

hookimpl = pluggy.HookimplMarker("beamtrawl")


class NotText:
    """Looks like nothing a document field may hold."""

    def __repr__(self):
        return "NotText()"


def prepare_crash(data: bytes, url: str, mimetype: str, params: dict):
    os.kill(os.getpid(), signal.SIGSEGV)


CRASH = PreparatorSpec("crash", prepare_crash, priority=20, url_pattern=re.compile(r"\.crash$"))


class Saboteur:
    def __init__(self, hook, url, how="type"):
        self.hook, self.url, self.how = hook, re.compile(url), how

    def _spoil(self, hook, url):
        return hook == self.hook and self.url.search(url)

    @hookimpl
    def on_after_prepare(self, raw_document, preparator, prepared):
        if self._spoil("on_after_prepare", raw_document.entry.url):
            return dataclasses.replace(prepared, title=NotText())
        return None

    @hookimpl
    def on_create_index_entry(self, doc, index):
        if self._spoil("on_create_index_entry", doc.url):
            return doc._replace(content_hash="0" * 40_000) if self.how == "huge" else doc._replace(size=NotText())
        return None


class Gatekeeper:
    def __init__(self, url):
        self.url = re.compile(url)

    def groups(self, entry):
        if self.url.search(entry.url):
            raise LookupError(f"no account for {entry.url}")
