"""The budgeted depth-first walk that every folder-tree source shares (file, smb, imap), and the listing
evidence each folder it lists leaves behind (:class:`~beamtrawl.transforms.records.Listing`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator

from beamtrawl.transforms.compare import Unchanged
from beamtrawl.transforms.records import Listing
from beamtrawl.transforms.urls import container_key


def walk_to_budget(stack: list, budget: int | None, list_folder: Callable[[object, list], Iterator]
                   ) -> Iterator:
    """List folders from ``stack`` depth-first: ``list_folder(folder, stack)`` yields its records, pushes
    its sub-folders and returns how many entries it listed. Past ``budget`` entries the folders not yet
    listed are yielded as frontier items, so the next discovery round spreads them over workers. Each folder
    listed to its end is followed by its :class:`Listing`."""
    listed = 0
    while stack:
        if budget is not None and listed >= budget:
            yield from stack
            return
        folder = stack.pop()
        below = len(stack)
        listed += yield from evidenced(folder.url, list_folder(folder, stack), lambda below=below: stack[below:])


def evidenced(url: str, records: Iterable, children: Callable[[], Iterable | None]) -> Iterator:
    """``records`` of one listing of container ``url``, its entries (those not marked yet, and the files it found
    unchanged: :class:`~beamtrawl.transforms.compare.Unchanged`) marked as the listing's, then the listing's
    evidence: how many distinct entries it marked and the containers ``children()`` it handed on (None: no
    evidence after all). A listing that reports ``url`` incomplete leaves none (its documents are kept as it
    is). Returns what ``records`` returns."""
    key, records, listing = container_key(url), iter(records), uuid.uuid4().hex[:16]
    seen: set[str] = set()
    complete = True
    while True:
        try:
            record = next(records)
        except StopIteration as done:
            result = done.value
            break
        if record.route == "entries" and not record.listing:
            seen.add(record.url)
            record = record.listed_by(listing)
        elif record.route == Unchanged.route and not record.listing:  # the files found unchanged, no entry made
            seen.update(record.urls)
            record = record.listed_by(listing)
        elif record.route == "events" and record.kind == "incomplete" and container_key(record.url) == key:
            complete = False
        yield record
    handed_on = children() if complete else None
    if handed_on is not None:
        yield Listing(key, listing, True, len(seen), sorted({container_key(c.url) for c in handed_on} - {key}))
    return result


def item_evidence(url: str, records: Iterable) -> Iterator:
    """A whole item's records; if its source left no listing evidence of its own (a third party's that does
    not use :func:`walk_to_budget`), evidence for the item as one listing: its entries and the containers it
    handed on to the next round."""
    handed_on: list = []
    own = False

    def watched():
        nonlocal own
        for record in records:
            if record.route == "listings":
                own = True
            elif record.route == "frontier":
                handed_on.append(record)
            yield record

    yield from evidenced(url, watched(), lambda: None if own else handed_on)
