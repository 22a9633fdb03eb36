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
from importlib.metadata import entry_points

from beamtrawl.transforms.preparators import BUILTIN, CONFIGURABLE
from beamtrawl.transforms.preparators.base import PreparatorSpec

GROUP = "beamtrawl.preparators"


class RegistryError(Exception):
    """A registered preparator cannot be loaded; the message is one line for the user."""


def registered() -> dict[str, PreparatorSpec]:
    """Every preparator by name; built-ins first, in their order."""
    specs = {spec.name: spec for spec in (*BUILTIN, *CONFIGURABLE)}
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        where = f"entry point {point.name} = {point.value}"
        if point.name in specs:
            raise RegistryError(f"{where} ({point.dist.name if point.dist else '?'}): the name "
                                f"{point.name!r} is taken by a built-in preparator")
        try:
            loaded = point.load()
        except Exception as err:  # noqa: BLE001 - whatever a broken plugin raises, say which one
            raise RegistryError(f"{where} cannot be loaded: {type(err).__name__}: {err}") from None
        if isinstance(loaded, PreparatorSpec):
            specs[point.name] = replace(loaded, name=point.name)
        elif callable(loaded):
            specs[point.name] = PreparatorSpec(point.name, loaded)
        else:
            raise RegistryError(f"{where} is neither a PreparatorSpec nor a function")
    return specs


def default_instances(specs: dict[str, PreparatorSpec]) -> list[PreparatorSpec]:
    """The instances a crawl has without configuration: every preparator that accepts something on
    its own (a bare function or ``external`` waits until configured)."""
    return [spec for spec in specs.values() if spec.mime_types or spec.url_pattern is not None]
