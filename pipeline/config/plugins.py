"""The ``plugins:`` section.

::

    plugins:
      - plugin: filesize_filter      # shipped name, entry point in group beamtrawl.plugins, or pkg.mod:Class
        enabled: true                # a disabled entry is not loaded at all
        priority: 0                  # higher runs first, as for preparators
        params: {min_bytes: 1}       # keyword arguments of the plugin class

Every enabled plugin is loaded once while the configuration is read (not for searching), so a missing
plugin, a bad parameter or an implementation of an unknown hook is a one-line configuration error before
the crawl starts; workers load their own instances again.
"""

from __future__ import annotations

from typing import Annotated, Any

from beamtrawl.plugins.manager import PluginHost, PluginLoadError, PluginSpec
from beamtrawl.transforms.fields import Count, Flag, OrEmpty, Problem, Section, Text, fail
from pydantic import Field, field_validator


class PluginEntry(Section):
    """A plugin and its parameters."""

    plugin: Text
    """a shipped name, an entry point of the group beamtrawl.plugins, or pkg.module:Class"""
    enabled: Flag = True
    """false: the plugin is not loaded at all"""
    priority: Count = PluginSpec.priority
    """higher runs first, as for preparators"""
    params: Annotated[dict[str, Any], OrEmpty] = Field(default_factory=dict)
    """keyword arguments of the plugin class"""

    @field_validator("params", mode="before")
    @classmethod
    def _names(cls, params):
        if isinstance(params, dict) and any(not isinstance(key, str) or not key.isidentifier() for key in params):
            raise fail("keys must be names such as min_bytes")
        return params


def plugin_specs(entries: tuple[PluginEntry, ...], load: bool = True) -> tuple[PluginSpec, ...]:
    """The enabled plugins, each loaded once to check it unless ``load`` is false (searching)."""
    specs = []
    for i, entry in enumerate(entries):
        if not entry.enabled:
            continue
        spec = PluginSpec(entry.plugin, entry.priority, tuple(sorted(entry.params.items())))
        try:
            if load:
                PluginHost((spec,)).load()
        except PluginLoadError as err:
            raise Problem(f"plugins[{i}].{err.key}", str(err)) from None
        specs.append(spec)
    return tuple(specs)
