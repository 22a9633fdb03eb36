"""Guards against URL spaces without end (calendars, session ids, recursive paths)."""

from __future__ import annotations

from urllib.parse import urlsplit

#: Schemes a link on a web page may lead to. Never file:, smb: or imap:, whatever the whitelist says.
LINK_SCHEMES = ("http", "https")


def link_in_scope(url: str) -> bool:
    """May a link found on a web page be followed at all?"""
    return urlsplit(url).scheme in LINK_SCHEMES


def too_many_cycles(url: str, max_cycle_count: int) -> bool:
    """regain's MaxCycleCount: the path repeats segments (``/a/b/a/b/a/b``) — rejected when the number of
    distinct segments is at most ``total - max_cycle_count``. A negative count (regain's default) switches
    it off."""
    if max_cycle_count < 0:
        return False
    segments = [s for s in urlsplit(url).path.split("/") if s]
    repeats = len(segments) - len(set(segments))
    return repeats > 0 and repeats >= max_cycle_count
