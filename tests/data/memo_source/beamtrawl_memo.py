"""A third-party source: ``memo://book/folder/note.txt``, notes kept in this module (a real source would
ask a server). It keeps beamtrawl's Source contract and two of its optional capabilities, and names
nothing of beamtrawl but the records, the URL helpers and the settings it is handed."""

from __future__ import annotations

import io
from urllib.parse import urlsplit

from beamtrawl.transforms.records import Entry, FrontierItem, event
from beamtrawl.transforms.urls import depth_below, doc_id

MTIME_NS = 1_700_000_000 * 1_000_000_000
BOOKS = {
    "book": {
        "birds/puffin.txt": b"The puffin nests in burrows on grassy cliffs.\n",
        "birds/seabirds/gannet.txt": b"A gannet dives from thirty metres.\n",
        "birds/seabirds/fulmar.txt": b"The fulmar glides on stiff wings.\n",
        "sea/tides.txt": b"Spring tides follow the new moon.\n",
        "readme.txt": b"Notes on the coast.\n",
    },
}


def _split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.netloc, parts.path.strip("/")


class MemoSource:
    schemes = ("memo",)

    def __init__(self, settings):
        self.settings = settings  # logins and settings of the crawl; a memo book needs none

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None):
        """List a folder: its notes, and its sub-folders for the next round (all of them at once without
        a budget, so the last round leaves nothing over)."""
        book, folder = _split(item.url)
        if book not in BOOKS:
            yield event("incomplete", item.url, "discover", f"no such memo book: {book}")
            return
        prefix = f"{folder}/" if folder else ""
        below = sorted(name[len(prefix):] for name in BOOKS[book] if name.startswith(prefix))
        here = [name for name in below if budget is None or "/" not in name]
        yield event("listed", count=len(here))
        for name in here:
            url = f"memo://{book}/{prefix}{name}"
            decision = rules.decide(url, depth_below(url, item.root))
            if not decision.accepted or not decision.index:
                yield event("declined", url, "discover", "")
                continue
            yield Entry(id=doc_id(url), url=url, root=item.root, depth=depth_below(url, item.root),
                        size=len(BOOKS[book][prefix + name]), mtime_ns=MTIME_NS, identity="", content=None,
                        mimetype="text/plain", outlinks=[], etag="", http_last_modified="", source_url=item.url,
                        link_text="")
        for name in sorted({name.split("/", 1)[0] for name in below if "/" in name} if budget is not None else ()):
            url = f"memo://{book}/{prefix}{name}"  # a folder's URL, as file:// spells one: no slash
            yield FrontierItem(url, item.root, depth_below(url, item.root), url, [], item.url, "")

    def open_document(self, url: str):
        book, name = _split(url)
        try:
            return io.BytesIO(BOOKS[book][name])
        except KeyError:
            raise OSError(f"no such memo: {url}") from None

    def unchanged_state(self, url: str, rules) -> dict[str, list[int]]:
        """Notes never change here: the number of notes is the whole state."""
        book, _folder = _split(url)
        return {url: [len(BOOKS[book])]}
