"""The budgeted depth-first walk that every folder-tree source shares (file, smb, imap)."""

from __future__ import annotations

from collections.abc import Callable, Iterator


def walk_to_budget(stack: list, budget: int | None, list_folder: Callable[[object, list], Iterator]
                   ) -> Iterator:
    """List folders from ``stack`` depth-first: ``list_folder(folder, stack)`` yields its records, pushes
    its sub-folders and returns how many entries it listed. Past ``budget`` entries the folders not yet
    listed are yielded as frontier items, so the next discovery round spreads them over workers."""
    listed = 0
    while stack:
        if budget is not None and listed >= budget:
            yield from stack
            return
        listed += yield from list_folder(stack.pop(), stack)
