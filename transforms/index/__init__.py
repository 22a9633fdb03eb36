"""Index targets (the embedded SQLite index; OpenSearch later) and the transforms that read and write them."""

from __future__ import annotations

from transforms.index.base import Hit, IndexTarget, IndexUnavailable
from transforms.index.sqlite import EmbeddedIndex


def make_target(index_config) -> IndexTarget:
    """The target a configuration's ``index`` section names."""
    return EmbeddedIndex(index_config.path)


__all__ = ["EmbeddedIndex", "Hit", "IndexTarget", "IndexUnavailable", "make_target"]
