"""robots.txt through protego: may a user agent fetch a URL, how long to wait between requests to a
host, and which sitemaps the host announces."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from beamtrawl.transforms.sources.http.fetch import Fetcher, FetchError
from protego import Protego


@dataclass
class Robots:
    rules: Protego | None  # None: no robots.txt (404), everything is allowed
    user_agent: str
    default_delay: float = 0.0
    sitemaps: list[str] = field(default_factory=list)

    def allows(self, url: str) -> bool:
        return self.rules is None or self.rules.can_fetch(url, self.user_agent)

    @property
    def delay(self) -> float:
        """Seconds between two requests to the host: Crawl-delay if it asks for more than we would wait."""
        asked = self.rules.crawl_delay(self.user_agent) if self.rules is not None else None
        return max(self.default_delay, float(asked or 0))


def robots_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def load_robots(fetcher: Fetcher, url: str, user_agent: str, default_delay: float = 0.0) -> Robots:
    """The robots.txt of ``url``'s host. 4xx means no rules (RFC 9309); 5xx, 429 (as Google reads it), any
    other answer that is not 2xx, or no answer means the host may not be crawled now, which raises
    :class:`FetchError` so its pages are kept."""
    page = fetcher.fetch(robots_url(url))
    if 400 <= page.status < 500 and page.status != 429:
        return Robots(None, user_agent, default_delay)
    if not 200 <= page.status < 300:
        raise FetchError(f"robots.txt answered {page.status}")
    rules = Protego.parse(page.body.decode("utf-8", "replace"))
    return Robots(rules, user_agent, default_delay, list(rules.sitemaps))
