"""The ``plugins:`` section of the crawl configuration.

::

    plugins:
      - plugin: filesize_filter      # shipped name, entry point in group beamtrawl.plugins, or pkg.mod:Class
        enabled: true                # default true; a disabled entry is not loaded at all
        priority: 0                  # default 0; higher runs first, as for preparators
        params: {min_bytes: 1}       # keyword arguments of the plugin class

Every enabled plugin is loaded once while the configuration is read, so a missing plugin, a bad
parameter or an implementation of an unknown hook is a one-line configuration error before the
crawl starts; workers load their own instances again.
"""

from __future__ import annotations

from typing import Any

from beamtrawl.plugins.manager import PluginHost, PluginLoadError, PluginSpec


def parse_plugins(r, raw: Any, load: bool = True) -> tuple[PluginSpec, ...]:
    """``r`` is pipeline.config's ``_Reader``; ``load=False`` skips loading (for searching)."""
    specs = []
    for i, entry in enumerate(r.seq(raw, "plugins")):
        path = f"plugins[{i}]"
        entry = r.mapping(entry, path, {"plugin", "enabled", "priority", "params"}, required={"plugin"})
        name = r.string(entry["plugin"], f"{path}.plugin")
        priority = entry.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise r.fail(f"{path}.priority", f"must be an integer, got {priority!r}")
        params = entry.get("params") or {}
        params = r.mapping(params, f"{path}.params", set(params) if isinstance(params, dict) else set())
        if any(not isinstance(key, str) or not key.isidentifier() for key in params):
            raise r.fail(f"{path}.params", "keys must be names such as min_bytes")
        params = {k: r.expand(v, f"{path}.params.{k}") if isinstance(v, str) else v for k, v in params.items()}
        if not r.boolean(entry.get("enabled", True), f"{path}.enabled"):
            continue
        spec = PluginSpec(name, priority, tuple(sorted(params.items())))
        try:
            if load:
                PluginHost((spec,)).load()
        except PluginLoadError as err:
            raise r.fail(f"{path}.{err.key}", str(err)) from None
        specs.append(spec)
    return tuple(specs)
