"""Which preparators exist: the built-ins and those other distributions register under the entry-point
group ``beamtrawl.preparators``. An entry point names a :class:`PreparatorSpec` (its MIME types,
priority and parameter defaults) or a bare preparator function (then the configuration must give
``mime_types`` or ``url_pattern``); the entry point's name is the preparator's name.

A third-party distribution declares, e.g. in its pyproject.toml::

    [project.entry-points."beamtrawl.preparators"]
    postscript = "beamtrawl_ps:PREPARATOR"
"""

from __future__ import annotations

from dataclasses import replace

from beamtrawl.transforms.preparators import BUILTIN, CONFIGURABLE
from beamtrawl.transforms.preparators.base import PreparatorSpec
from beamtrawl.transforms.registry import Registry, RegistryError, log

__all__ = ["GROUP", "RegistryError", "default_instances", "registered"]

GROUP = "beamtrawl.preparators"


def registered() -> dict[str, PreparatorSpec]:
    """Every preparator by name; built-ins first, in their order. An entry point that claims a built-in's
    name or another's is skipped with a warning (the policy of :mod:`beamtrawl.transforms.registry`), and so
    is one that cannot be imported or names neither a spec nor a function."""
    specs = {spec.name: spec for spec in (*BUILTIN, *CONFIGURABLE)}
    registry = Registry("preparator", GROUP, specs)
    for name in registry.names()[len(specs):]:
        try:
            loaded = registry.load(name)
        except RegistryError as err:  # a broken distribution costs its own preparator, not every crawl
            log.warning("%s (%s): skipped", err, registry.distribution(name))
            continue
        if isinstance(loaded, PreparatorSpec):
            specs[name] = replace(loaded, name=name)
        elif callable(loaded):
            specs[name] = PreparatorSpec(name, loaded)
        else:
            log.warning("entry point %s = %s (%s) is neither a PreparatorSpec nor a function: skipped", name,
                        registry.where(name), registry.distribution(name))
    return specs


def default_instances(specs: dict[str, PreparatorSpec]) -> list[PreparatorSpec]:
    """The instances a crawl has without configuration: every preparator that accepts something on
    its own (a bare function or ``external`` waits until configured)."""
    return [spec for spec in specs.values() if spec.mime_types or spec.url_pattern is not None]
