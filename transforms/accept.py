"""The accept decision, written once: may a URL be crawled, and with which parse/index flags?

regain's rule: a URL is accepted iff at least one whitelist entry matches and no blacklist entry
does; the first matching whitelist entry gives the flags. Entries match the URL as a person writes
it (transforms.values.UrlPattern); each that decides a URL is counted, and the report warns of an entry
that decided nothing in a crawl (a rule that silently matches nothing is a hole, not a rule). beamtrawl adds scope: the URL must lie
under one of the start URLs (by whole segments) and within ``max_depth``. Plugins then have their
say (regain's order): ``check_dynamic_blacklist`` may reject what the rules accepted, and every
decision is announced through ``on_accept_url`` or ``on_decline_url`` (plugins/hookspecs.py).
The plugins travel with the pickled Rules as configuration only and are loaded in each worker on
first use; :meth:`Rules.keeps` (the freshness join's question) asks the rules alone, so it fires
no hooks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from beamtrawl.plugins.hookspecs import Job
from beamtrawl.plugins.manager import PluginHost
from beamtrawl.transforms.sources import by_host
from beamtrawl.transforms.urls import depth_below, is_under

RULES_MATCHED = "rules_matched"  # Beam metrics namespace: one counter per rule that decided a URL


def rule_matched(pattern, n: int = 1) -> None:
    """Count ``n`` URLs decided by a whitelist, blacklist or url_rules entry (``pattern.where``), so the report
    can warn of a rule that matched nothing. Without Beam loaded no pipeline runs here: nothing to count."""
    metrics = sys.modules.get("apache_beam.metrics")
    if metrics is not None and pattern.where:
        metrics.Metrics.counter(RULES_MATCHED, pattern.where).inc(n)


@dataclass(frozen=True)
class Decision:
    accepted: bool
    parse: bool = False
    index: bool = False
    reason: str = ""


#: The accepted decisions, made once: a listing decides every file, and a frozen dataclass is slow to build.
_ACCEPTED = {(parse, index): Decision(True, parse, index) for parse in (False, True) for index in (False, True)}


class Rules:
    """Picklable: built on the driver from the configuration, shipped to every worker."""

    def __init__(self, config):
        self.whitelist = config.whitelist
        self.blacklist = config.blacklist
        # regain's seed: start URLs join the frontier "according to the whitelist and blacklist". The
        # configuration already refused a start no whitelist entry matches; the start's own flags stand in
        # for the whitelist's, so here only the blacklist can turn a start URL away.
        self.declined_starts = tuple(s.url for s in config.start if self._blacklisted(s.url))
        self.starts = {s.url: s for s in config.start if s.url not in self.declined_starts}
        self.roots = tuple(self.starts)
        self.max_depth = config.max_depth
        self.plugins = PluginHost(config.plugins)

    def decide(self, url: str, depth: int = 0, source_url: str = "", link_text: str = "") -> Decision:
        """The flags for ``url`` found ``depth`` levels below its start URL (folder levels for files, link
        hops for web pages), in ``source_url`` (a folder or page) under a link reading ``link_text``."""
        decision = self._rules(url, depth)
        if not self.plugins:
            return decision
        if decision.accepted and self.plugins.any_true(
                "check_dynamic_blacklist", url, url=url, source_url=source_url, source_link_text=link_text):
            decision = Decision(False, reason="rejected by a plugin's dynamic blacklist")
        if decision.accepted:
            job = Job(url, source_url, link_text, depth, decision.parse, decision.index)
            self.plugins.call("on_accept_url", url, url=url, job=job)
        else:
            self.plugins.call("on_decline_url", url, url=url)
        return decision

    def plugin_problems(self) -> list:
        """Plugin failures in :meth:`decide` since the last call, as report events."""
        return self.plugins.problems()

    def _rules(self, url: str, depth: int) -> Decision:
        entry = next((w for w in self.whitelist if w.matches(url)), None)
        if entry is not None:
            rule_matched(entry)
        blocked = self._blacklist_entry(url) if entry is not None else None
        if blocked is not None:
            rule_matched(blocked)
        return self._verdict(entry, blocked, depth)

    def _verdict(self, entry, blocked, depth: int) -> Decision:
        """The decision for a URL ``depth`` levels deep that whitelist entry ``entry`` and blacklist entry
        ``blocked`` match first (None: none)."""
        if entry is None:
            return Decision(False, reason="matches no whitelist entry")
        if blocked is not None:
            return Decision(False, reason="matches a blacklist entry")
        if self.max_depth is not None and depth > self.max_depth:
            return Decision(False, reason=f"deeper than max_depth {self.max_depth}")
        if not (entry.parse or entry.index):
            return Decision(False, reason="whitelist entry neither parses nor indexes it")
        return _ACCEPTED[entry.parse, entry.index]

    def children(self, folder_url: str) -> FolderRules:
        """The decision for the URLs listed in one folder (``folder_url`` and ``/`` and a name)."""
        return FolderRules(self, folder_url)

    def _blacklist_entry(self, url: str):
        return next((b for b in self.blacklist if b.matches(url)), None)

    def _blacklisted(self, url: str) -> bool:
        return self._blacklist_entry(url) is not None

    def seeds(self) -> list:
        """The start URLs a crawl begins from: those the blacklist admits and that parse or index."""
        return [s for s in self.starts.values() if s.parse or s.index]

    def start(self, url: str):
        """The start URL entry (with its parse/index flags) if ``url`` is one."""
        return self.starts.get(url)

    def root_of(self, url: str) -> str | None:
        """The innermost start URL containing ``url``."""
        roots = [r for r in self.roots if is_under(url, r)]
        return max(roots, key=len) if roots else None

    def keeps(self, url: str, found_under: str = "") -> bool:
        """Would this crawl still index ``url`` if it found it? False means: delete it. ``found_under`` is the
        start URL the index says it was found under: a web page on another host than its start page lies
        under no start URL, and is still accepted while that start URL is configured."""
        root = self.root_of(url) or (found_under if found_under in self.starts else None)
        if root is None:
            return False
        if root == url:  # a start URL naming one document
            return self.starts[url].index
        # a web page's depth is link hops (a ByHost source's), known only while crawling: its path says nothing
        depth = 0 if by_host(url) else depth_below(url, root)
        decision = self._rules(url, depth)
        return decision.accepted and decision.index


class FolderRules:
    """:meth:`Rules.decide` for a folder's children, ``decide(url, depth)``. Where every rule's answer is the
    same for each name in the folder (a prefix rule answers by the folder's URL alone unless it ends inside a
    name) and no plugin has its say, the decision is made once per depth and its rules counted once per folder
    (:meth:`flush`); else each URL is decided by itself. A listing decides every file it lists."""

    def __init__(self, rules: Rules, folder_url: str):
        self.rules, self.folder_url = rules, folder_url
        prefix = folder_url.rstrip("/") + "/"
        white = _fixed(rules.whitelist, prefix)
        black = _fixed(rules.blacklist, prefix) if white is not None and white[0] is not None else (None,)
        self.fixed = None if (rules.plugins or white is None or black is None) else (white[0], black[0])
        self.decided: dict[int, Decision] = {}
        self.n = 0

    def decide(self, url: str, depth: int) -> Decision:
        if self.fixed is None:
            return self.rules.decide(url, depth, source_url=self.folder_url)
        self.n += 1
        decision = self.decided.get(depth)
        if decision is None:
            decision = self.decided[depth] = self.rules._verdict(*self.fixed, depth)
        return decision

    def flush(self) -> None:
        """Count the rules that decided this folder's children, once for all of them."""
        if self.n and self.fixed is not None:
            for pattern in self.fixed:
                if pattern is not None:
                    rule_matched(pattern, self.n)
        self.n = 0


def _fixed(patterns, prefix: str) -> tuple | None:
    """The first of ``patterns`` that matches every URL beginning with ``prefix`` (and a name), as ``(it,)``,
    or ``(None,)`` if none matches any; None where a pattern before it can tell names apart (a regex, or a
    prefix that ends inside a name)."""
    for pattern in patterns:
        if pattern.prefix is None or (pattern.prefix.startswith(prefix) and pattern.prefix != prefix):
            return None
        if prefix.startswith(pattern.prefix):
            return (pattern,)
    return (None,)
