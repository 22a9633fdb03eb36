"""regain's nine crawler hooks as pluggy hook specifications, in the order a crawl calls them.

A plugin is a class (or module) whose methods carry ``@hookimpl`` (``pluggy.HookimplMarker("beamtrawl")``,
also exported here) and are named after these hooks; a method may take any subset of a hook's
arguments. See :mod:`plugins.manager` for loading, ordering and error handling.

Where hooks run matters on a distributed runner. **Driver** hooks run once in the process that
launched the crawl. **Worker** hooks run inside Beam DoFns, in many processes at once, each with its
own plugin instances (loaded in ``DoFn.setup``, never pickled with the graph): a plugin must not
rely on module globals or on seeing every call of a crawl in one process. Beam retries a failed
bundle, so a worker hook **may run more than once for the same URL or document**; make its side
effects idempotent (write by key, not append-only counters).

A hook that raises is logged and becomes a ``plugin_failed`` line in the crawl report (stage
``plugin:<hook>``); the crawl goes on as if that plugin had returned nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import pluggy

hookspec = pluggy.HookspecMarker("beamtrawl")
hookimpl = pluggy.HookimplMarker("beamtrawl")


class Job(NamedTuple):
    """What ``on_accept_url`` learns about an accepted URL (regain's CrawlerJob)."""

    url: str
    source_url: str  # the folder or page it was found in; "" when the source does not say
    link_text: str  # the anchor text on the referring page; "" for files
    depth: int  # levels below its start URL
    parse: bool  # will be expanded (a folder, a page whose links are followed)
    index: bool  # will be indexed


# -- start (driver) ----------------------------------------------------------------------------

@hookspec
def on_start_crawling(config):
    """Driver, once per crawl, before the index is opened or any URL is looked at.

    ``config`` is the validated :class:`pipeline.config.Config` (read-only; it is frozen).
    """


# -- discovery (workers) -----------------------------------------------------------------------
# All three run inside transforms.accept.Rules.decide, the one accept function every source calls,
# for every URL a source finds below a start URL (start URLs themselves are accepted by the
# configuration and do not pass here).

@hookspec
def check_dynamic_blacklist(url, source_url, source_link_text):
    """Worker, per URL that passed the whitelist and blacklist (possibly again when a bundle is
    retried). Return True to reject the URL; any plugin returning True rejects it, and the URL then
    gets ``on_decline_url`` instead of ``on_accept_url``. Must not change anything.
    """


@hookspec
def on_accept_url(url, job):
    """Worker, per accepted URL (documents and folders/pages to expand), after the dynamic
    blacklist; possibly again when a bundle is retried. ``job`` is a :class:`Job`. Observe only.
    """


@hookspec
def on_decline_url(url):
    """Worker, per URL the rules or a dynamic blacklist rejected; possibly again when a bundle is
    retried. Observe only.
    """


# -- preparation (workers) ---------------------------------------------------------------------

@hookspec
def on_before_prepare(raw_document, preparator):
    """Worker, before each preparator run on a new or changed document (again if a bundle is
    retried, and once more per preparator if the first one fails). ``raw_document`` is a
    :class:`transforms.records.RawDocument` (``entry``, ``mimetype``, ``data``); ``preparator`` the
    :class:`transforms.preparators.PreparatorSpec` about to run. Observe only. Documents indexed by
    metadata only (over-size) are not prepared and get no prepare hooks.
    """


@hookspec
def on_after_prepare(raw_document, preparator, prepared):
    """Worker, once per successfully prepared document (again if a bundle is retried).
    ``prepared`` is the :class:`transforms.preparators.Prepared` result (title, content, summary,
    headlines, metadata). Return a changed ``Prepared`` (e.g. ``dataclasses.replace(prepared,
    title=...)``) to replace it, or None to keep it; each later plugin sees the result so far.
    """


# -- writing (workers) -------------------------------------------------------------------------

@hookspec
def on_create_index_entry(doc, index):
    """Worker, per new or changed document, just before it is written (again if a bundle is
    retried; also when the write then fails). ``doc`` is a :class:`transforms.records.IndexDoc`;
    return a changed one (``doc._replace(...)``) to write that instead, or None. ``index`` is the
    index target: read it if you must, never write through it. Keep ``id`` and ``url`` as they are.
    """


@hookspec
def on_delete_index_entry(doc, index):
    """Driver, per document about to be deleted (vanished or no longer accepted), after the pipeline
    succeeded and only when the delete guard lets deletes run — the crawl's last step; again on the
    next crawl for documents a killed crawl did not get to delete. ``doc`` is a
    :class:`transforms.records.SnapshotEntry` (id, url, size, …). Observe only.
    """


# -- finish (driver) ---------------------------------------------------------------------------

@hookspec
def on_finish_crawling(config, report):
    """Driver, once per crawl, after the pipeline — also when the crawl failed (then
    ``report["fatal"]`` says why, and the report may hold nothing else). ``report`` is the crawl
    report as a dict; changes to it are not kept.
    """


#: The hooks in the order a crawl calls them.
HOOKS = ("on_start_crawling", "check_dynamic_blacklist", "on_accept_url", "on_decline_url",
         "on_before_prepare", "on_after_prepare", "on_create_index_entry", "on_delete_index_entry",
         "on_finish_crawling")
#: Hooks whose plugins can change what a document becomes: part of the preparation fingerprint.
DOCUMENT_HOOKS = ("on_after_prepare", "on_create_index_entry")
