"""Index targets (the embedded SQLite index, OpenSearch, a Delta table) and the transforms that read and write them.

``OpenSearchIndex`` lives in ``transforms.index.opensearch``: its client library is loaded only for an
OpenSearch index (it costs 0.15 s of every command's start otherwise)."""

from __future__ import annotations

from beamtrawl.transforms.index.base import Hit, IndexTarget, IndexUnavailable
from beamtrawl.transforms.index.sqlite import EmbeddedIndex


def make_target(index_config) -> IndexTarget:
    """The target a configuration's ``index`` section names."""
    if index_config.path:
        return EmbeddedIndex(index_config.path)
    if index_config.table:
        from beamtrawl.transforms.index.table import DeltaIndex  # delta-rs loads only for a table

        return DeltaIndex(index_config.table, dict(index_config.storage_options))
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    return OpenSearchIndex(index_config.url, index_config.name, index_config.node_options)


__all__ = ["EmbeddedIndex", "Hit", "IndexTarget", "IndexUnavailable", "make_target"]
