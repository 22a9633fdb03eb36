"""The ``preparators:`` and ``preparation:`` sections of the crawl configuration.

::

    preparators:                 # changes to the built-in instances, and new instances
      - name: metadata_only      # a built-in instance: switch the catch-all off
        enabled: false
      - name: postscript         # a new instance of a registered preparator
        preparator: external
        url_pattern: '\\.ps$'     # overrides the MIME match, as in regain (a search in the URL)
        priority: 20
        params: {command: 'ps2ascii ${filename}', timeout: 30}
    preparation: {timeout: 60, memory_limit: 4 GiB, isolate: true, max_content_length: 10000000}

Every registered preparator (the built-ins and those of the entry-point group ``beamtrawl.preparators``)
has an instance of its own name with its defaults, unless it needs configuration (``external``).
An entry naming an instance changes it; an entry with a new name and ``preparator:`` adds one, so one
preparator may run as several instances. Parameters must be ones the preparator declares, with
values of the type of its default.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from beamtrawl.transforms.preparators import PreparatorSpec
from beamtrawl.transforms.preparators.isolation import Bounds
from beamtrawl.transforms.preparators.registry import RegistryError, default_instances, registered

_ENTRY_KEYS = {"name", "preparator", "enabled", "priority", "url_pattern", "mime_types", "params"}
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _param(r, value: Any, default: Any, path: str) -> Any:
    """``value`` as the type of ``default``; an int is fine where a float is expected."""
    if isinstance(default, bool):
        return r.boolean(value, path)
    if isinstance(default, int):
        return r.integer(value, path)
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise r.fail(path, f"must be a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise r.fail(path, f"must be a string, got {value!r}")
        return value  # ${filename} and the like stay as written; no environment expansion here
    if isinstance(default, (list, tuple)):
        return tuple(r.string(v, f"{path}[{i}]") for i, v in enumerate(r.seq(value, path)))
    raise r.fail(path, f"cannot be configured (default {default!r})")


def _params(r, raw: Any, base: PreparatorSpec, path: str) -> tuple[tuple[str, object], ...]:
    defaults = dict(base.params)
    given = r.mapping({} if raw is None else raw, path, set(defaults))
    params = {key: _param(r, given[key], default, f"{path}.{key}") if key in given else default
              for key, default in defaults.items()}
    if base.check_params is not None:
        try:
            params = base.check_params(params)
        except ValueError as err:
            key, _, problem = str(err).partition(": ")
            raise r.fail(f"{path}.{key}" if problem else path, problem or str(err)) from None
    return tuple(params.items())


def parse_preparators(r, raw: Any) -> tuple[PreparatorSpec, ...]:
    try:
        available = registered()
    except RegistryError as err:
        raise r.fail("preparators", str(err)) from None
    instances = {spec.name: spec for spec in default_instances(available)}
    configured: set[str] = set()
    for i, entry in enumerate(r.seq(raw, "preparators")):
        path = f"preparators[{i}]"
        entry = r.mapping(entry, path, _ENTRY_KEYS, required={"name"})
        name = r.string(entry["name"], f"{path}.name")
        if not _NAME.fullmatch(name):
            raise r.fail(f"{path}.name", f"must be letters, digits, '_', '.' or '-', got {name!r}")
        if name in configured:
            raise r.fail(f"{path}.name", f"{name!r} is configured twice")
        configured.add(name)
        current = instances.get(name)
        own_kind = (current.preparator or current.name) if current is not None else name
        kind = r.string(entry.get("preparator", own_kind), f"{path}.preparator")
        if kind not in available:
            raise r.fail(f"{path}.preparator" if "preparator" in entry else f"{path}.name",
                         f"unknown preparator {kind!r} (known: {', '.join(sorted(available))})")
        if current is not None and own_kind != kind:
            raise r.fail(f"{path}.name", f"{name!r} is the {current.preparator or current.name} preparator's "
                                         "instance; give the new instance another name")
        base = current or replace(available[kind], name=name, preparator=kind)
        if not r.boolean(entry.get("enabled", True), f"{path}.enabled"):
            instances.pop(name, None)
            continue
        changes: dict[str, Any] = {"params": _params(r, entry.get("params"), replace(
            available[kind], params=base.params), f"{path}.params")}
        if "priority" in entry:
            changes["priority"] = r.integer(entry["priority"], f"{path}.priority", minimum=-1_000_000)
        if "url_pattern" in entry:
            changes["url_pattern"] = r.regex(entry["url_pattern"], f"{path}.url_pattern")
        if "mime_types" in entry:
            types = tuple(r.string(v, f"{path}.mime_types[{j}]")
                          for j, v in enumerate(r.seq(entry["mime_types"], f"{path}.mime_types")))
            bad = next((t for t in types if not re.fullmatch(r"[\w.+-]+/([\w.+-]+|\*)", t)), None)
            if bad is not None:
                raise r.fail(f"{path}.mime_types", f"{bad!r} is not a MIME type such as text/html or text/*")
            changes["mime_types"] = types
        spec = replace(base, **changes)
        if spec.url_pattern is None and not spec.mime_types:
            raise r.fail(path, "accepts nothing: give url_pattern or mime_types")
        instances[name] = spec
    return tuple(instances.values())


def parse_preparation(r, raw: Any) -> Bounds:
    if raw is None:
        return Bounds()
    raw = r.mapping(raw, "preparation", set(Bounds._fields))
    defaults = Bounds()
    timeout = raw.get("timeout", defaults.timeout)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise r.fail("preparation.timeout", f"must be a positive number of seconds, got {timeout!r}")
    memory = raw.get("memory_limit", defaults.memory_limit)
    memory = 0 if memory == 0 else r.size(memory, "preparation.memory_limit")
    if 0 < memory < 256 * 1024**2:
        raise r.fail("preparation.memory_limit", "must be 0 (no limit) or at least 256 MiB: Python and the "
                                                 "format libraries alone need that much address space")
    return Bounds(timeout=float(timeout), memory_limit=memory,
                  isolate=r.boolean(raw.get("isolate", defaults.isolate), "preparation.isolate"),
                  max_content_length=r.integer(raw.get("max_content_length", defaults.max_content_length),
                                               "preparation.max_content_length", minimum=1))
