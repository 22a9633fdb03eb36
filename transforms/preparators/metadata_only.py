"""The catch-all (regain's EmptyPreparator): no text, so the document is found by its name, path,
type, size and date."""

from __future__ import annotations

from beamtrawl.transforms.preparators.base import Prepared


def prepare_metadata_only(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    return Prepared()
