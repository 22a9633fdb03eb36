"""Index targets (the embedded SQLite index, OpenSearch) and the transforms that read and write them."""

from __future__ import annotations

from transforms.index.base import Hit, IndexTarget, IndexUnavailable
from transforms.index.opensearch import OpenSearchIndex
from transforms.index.sqlite import EmbeddedIndex


def make_target(index_config) -> IndexTarget:
    """The target a configuration's ``index`` section names."""
    if index_config.path:
        return EmbeddedIndex(index_config.path)
    c = index_config
    return OpenSearchIndex(c.url, c.name, c.analyzer, c.username, c.password, c.ca_file, c.verify_certs,
                           c.timeout, c.compress)


__all__ = ["EmbeddedIndex", "Hit", "IndexTarget", "IndexUnavailable", "OpenSearchIndex", "make_target"]
