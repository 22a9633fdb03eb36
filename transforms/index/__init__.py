"""Index targets (the embedded SQLite index, OpenSearch, a Delta table) and the transforms that read and write them.

The targets are a registry (:mod:`beamtrawl.transforms.registry`): the built-ins below and what other distributions
declare under the entry-point group ``beamtrawl.targets``; a target class is built by its ``from_config(section)``.
A target's module is imported only when a configuration names it (OpenSearch's client costs 0.15 s of every
command's start otherwise, delta-rs more)."""

from __future__ import annotations

from beamtrawl.transforms.index.base import Hit, IndexTarget, IndexUnavailable, TargetSettings
from beamtrawl.transforms.index.sqlite import EmbeddedIndex
from beamtrawl.transforms.registry import Registry, RegistryError

GROUP = "beamtrawl.targets"
REGISTRY = Registry("index target", GROUP, {"sqlite": EmbeddedIndex,
                                            "opensearch": f"{__name__}.opensearch:OpenSearchIndex",
                                            "delta": f"{__name__}.table:DeltaIndex"})


def settings_model(kind: str) -> type[TargetSettings]:
    """The model of an ``index`` section of ``kind`` (its target's ``Settings``); raises RegistryError."""
    model = getattr(REGISTRY.load(kind), "Settings", None)
    if not (isinstance(model, type) and issubclass(model, TargetSettings)) or \
            model.model_fields.get("kind") is None or model.model_fields["kind"].default != kind:
        raise RegistryError(f"{REGISTRY.where(kind)} is not an index target of kind {kind!r} (a target declares "
                            f"`Settings`, a TargetSettings with `kind: Literal[{kind!r}] = {kind!r}`)")
    return model


def make_target(index_config: TargetSettings) -> IndexTarget:
    """The target a configuration's ``index`` section names (its ``kind``); raises RegistryError."""
    return REGISTRY.load(index_config.kind).from_config(index_config)


__all__ = ["EmbeddedIndex", "Hit", "IndexTarget", "IndexUnavailable", "TargetSettings", "make_target", "settings_model"]
