"""The ``preparators:`` and ``preparation:`` sections.

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
values of the type of its default (checked against the registry in :func:`preparator_specs`).
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from beamtrawl.transforms.fields import (
    Count,
    Flag,
    Number,
    Problem,
    Regex,
    Seconds,
    Section,
    Text,
    explain,
    fail,
    matching,
    size,
)
from beamtrawl.transforms.values import Bounds

if TYPE_CHECKING:
    from beamtrawl.transforms.preparators import PreparatorSpec
from pydantic import Field, TypeAdapter, ValidationError, WithJsonSchema, field_validator

_DEFAULT = Bounds._field_defaults  # the bounds' defaults are written once, in Bounds


class PreparationSection(Section):
    """Bounds of every preparator run."""

    timeout: Seconds = _DEFAULT["timeout"]
    """seconds per document, hard; anew for the preparators after a killed one"""
    memory_limit: Annotated[int, WithJsonSchema({"type": ["integer", "string"], "format": "size"})] = \
        _DEFAULT["memory_limit"]
    """address space of the preparing process (a size, at least 256 MiB); 0: no limit"""
    isolate: Flag = _DEFAULT["isolate"]
    """false: run preparators in the worker, without the hard bounds"""
    max_content_length: Count = Field(_DEFAULT["max_content_length"], ge=1)
    """characters of text kept per document"""

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _memory(cls, value):
        memory = 0 if value == 0 else size(value)
        if 0 < memory < 256 * 1024**2:
            raise fail("must be 0 (no limit) or at least 256 MiB: Python and the format libraries alone need "
                       "that much address space")
        return memory

    def bounds(self) -> Bounds:
        return Bounds(self.timeout, self.memory_limit, self.isolate, self.max_content_length)


MimeType = matching(r"[\w.+-]+/([\w.+-]+|\*)", "{value!r} is not a MIME type such as text/html or text/*")
InstanceName = matching(r"[A-Za-z0-9_.-]+", "must be letters, digits, '_', '.' or '-', got {value!r}")


class PreparatorEntry(Section):
    """A preparator instance: a built-in one changed, or a new instance of a registered preparator."""

    name: InstanceName
    """the instance: a registered preparator's own name, or a new one (letters, digits, '_', '.', '-')"""
    preparator: Text | None = None
    """for a new instance: the registered preparator it runs"""
    enabled: Flag = True
    """false: the instance does not run"""
    priority: Annotated[Count, Field(ge=-1_000_000)] | None = None
    """higher runs first; not given: the preparator's own"""
    url_pattern: Regex | None = None
    """a regex searched in the URL; overrides the MIME types (as in regain)"""
    mime_types: tuple[MimeType, ...] | None = None
    """MIME types such as text/html or text/*; not given: the preparator's own"""
    params: dict[str, Any] | None = None
    """parameters the preparator declares, each of the type of its default"""


_PARAM_TYPES = {bool: Flag, int: Count, float: Number, str: str, tuple: tuple[Text, ...], list: tuple[Text, ...]}


@cache
def _adapter(kind: type) -> TypeAdapter:
    return TypeAdapter(_PARAM_TYPES[kind])


def _param(value: Any, default: Any, where: str) -> Any:
    """``value`` as the type of ``default``; an int is fine where a float is expected."""
    kind = next((k for k in _PARAM_TYPES if isinstance(default, k)), None)
    if kind is None:
        raise Problem(where, f"cannot be configured (default {default!r})")
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as err:
        key, problem = explain(err.errors()[0])
        raise Problem(f"{where}{key}", problem) from None


def _params(given: dict | None, base: PreparatorSpec, where: str) -> tuple[tuple[str, object], ...]:
    defaults = dict(base.params)
    sections = {key for key, default in defaults.items() if hasattr(default, "_fields")}  # e.g. the ocr: section's
    for key in given or {}:
        if key in sections:
            raise Problem(f"{where}.{key}", f"is set in the crawl file's own {key}: section")
        if key not in defaults:
            raise Problem(f"{where}.{key}", f"unknown key (allowed: {', '.join(sorted(set(defaults) - sections))})")
    params = {key: _param(given[key], default, f"{where}.{key}") if key in (given or {}) else default
              for key, default in defaults.items()}
    if base.check_params is not None:
        try:
            params = base.check_params(params)
        except ValueError as err:
            key, _, problem = str(err).partition(": ")
            raise Problem(f"{where}.{key}" if problem else where, problem or str(err)) from None
    return tuple(params.items())


def preparator_specs(entries: tuple[PreparatorEntry, ...]) -> tuple[PreparatorSpec, ...]:
    """The instances a crawl runs: the registered preparators' defaults changed and extended by ``entries``.
    The registry imports every format library, so only a crawl asks it (a search starts without them)."""
    from beamtrawl.transforms.preparators.registry import RegistryError, default_instances, registered

    try:
        available = registered()
    except RegistryError as err:
        raise Problem("preparators", str(err)) from None
    instances = {spec.name: spec for spec in default_instances(available)}
    configured: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"preparators[{i}]"
        if entry.name in configured:
            raise Problem(f"{where}.name", f"{entry.name!r} is configured twice")
        configured.add(entry.name)
        current = instances.get(entry.name)
        own_kind = (current.preparator or current.name) if current is not None else entry.name
        kind = entry.preparator or own_kind
        if kind not in available:
            near = difflib.get_close_matches(kind, available, n=1)  # the list may be cut: the likely one first
            raise Problem(f"{where}.preparator" if entry.preparator else f"{where}.name",
                          f"unknown preparator {kind!r}" + (f", did you mean {near[0]}?" if near else "")
                          + f" (known: {', '.join(sorted(available))})")
        if current is not None and own_kind != kind:
            raise Problem(f"{where}.name", f"{entry.name!r} is the {current.preparator or current.name} "
                                           "preparator's instance; give the new instance another name")
        base = current or replace(available[kind], name=entry.name, preparator=kind)
        if not entry.enabled:
            instances.pop(entry.name, None)
            continue
        changes = {key: getattr(entry, key) for key in ("priority", "url_pattern", "mime_types")
                   if getattr(entry, key) is not None}
        spec = replace(base, params=_params(entry.params, replace(available[kind], params=base.params),
                                            f"{where}.params"), **changes)
        if spec.url_pattern is None and not spec.mime_types:
            raise Problem(where, "accepts nothing: give url_pattern or mime_types")
        instances[entry.name] = spec
    return tuple(instances.values())
