"""One way to find an extension by name, for the five kinds beamtrawl has: sources, index targets,
preparators, plugins and access controllers.

A :class:`Registry` holds the built-ins (a name → ``"module:attribute"``, imported when first asked for, or
an object already made) and what other distributions declare under its entry-point group, e.g.::

    [project.entry-points."beamtrawl.targets"]
    notebook = "beamtrawl_notebook:NotebookIndex"

**One clash policy**: a name a built-in has, a name two distributions claim (which would win depends on
the order of sys.path) or a name that breaks the kind's rule is skipped with one warning line, and every
other extension loads; asking for a skipped name is an error repeating that line. Entry points are read
once per process and only when a name is not built in (reading them costs 100 ms of a command's start).
"""

from __future__ import annotations

import importlib
import logging
import re
from importlib.metadata import entry_points
from typing import Any

log = logging.getLogger("beamtrawl")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?")


class RegistryError(ValueError):
    """No extension, or a broken one, for a name; the message is one line for the user."""


def import_object(where: str) -> Any:
    """The object ``package.module:Name`` (or ``package.module.Name``) names; raises ImportError or
    AttributeError, as importing it would."""
    module_name, _, attribute = where.partition(":")
    if not attribute:
        module_name, _, attribute = where.rpartition(".")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


def _named(point) -> str:
    """An entry point as a warning names it: ``entry point memo = pkg:Memo (distribution pkg-dist)``."""
    return f"entry point {point.name} = {point.value} (distribution {point.dist.name if point.dist else '?'})"


class Registry:
    """The extensions of one kind. ``noun`` is what a name is to the user (``scheme`` for sources);
    ``rule`` a pattern every registered name must match, with ``rule_says`` explaining it."""

    def __init__(self, kind: str, group: str, builtin: dict[str, Any], noun: str = "name",
                 rule: tuple[re.Pattern, str] | None = None):
        self.kind, self.group, self.noun, self.rule = kind, group, noun, rule
        self.builtin = builtin
        self.clear()

    def clear(self) -> None:
        """Forget what was read and loaded (a test that installs a distribution calls it)."""
        self._points: dict[str, str] | None = None
        self._skipped: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}
        self._distributions: dict[str, str] = {}

    def _read(self) -> dict[str, str]:
        """Name → "module:attribute" of every entry point that survives the clash policy."""
        if self._points is None:
            claims: dict[str, list] = {}
            for point in entry_points(group=self.group):
                claims.setdefault(point.name.lower() if self.noun == "scheme" else point.name, []).append(point)
            self._points = {}
            for name, points in sorted(claims.items()):
                problem = self._clash(name, points)
                if problem:
                    self._skipped[name] = problem
                    log.warning("%s", problem)
                else:
                    self._points[name] = points[0].value
                    self._distributions[name] = points[0].dist.name if points[0].dist else "?"
        return self._points

    def _clash(self, name: str, points: list) -> str:
        """The warning that skips ``name``'s entry points, or "" when the one claim is good."""
        named = " and ".join(sorted(_named(point) for point in points))
        if self.rule and not self.rule[0].fullmatch(name):
            return f"{named}: skipped: {name!r} is not a {self.noun} ({self.rule[1]})"
        if name in self.builtin:
            return f"{named}: skipped: the {self.noun} {name!r} is served by a built-in {self.kind}"
        if len(points) > 1:
            return f"{named} claim the same {self.noun} {name!r}: {'neither' if len(points) == 2 else 'none'} is used"
        return ""

    def names(self) -> tuple[str, ...]:
        """Every name, built-ins first, without importing any extension."""
        return (*self.builtin, *(name for name in self._read() if name not in self.builtin))

    def known(self, name: str) -> bool:
        return name in self.builtin or name in self._read()

    def skipped(self, name: str) -> str:
        """Why ``name`` was skipped by the clash policy ("" if it was not)."""
        self._read()
        return self._skipped.get(name, "")

    def distribution(self, name: str) -> str:
        """``distribution NAME`` of an entry point's name ("built in" for a built-in's)."""
        self._read()
        return f"distribution {self._distributions[name]}" if name in self._distributions else "built in"

    def where(self, name: str) -> str:
        """Where ``name``'s extension is ("module:attribute"); raises RegistryError."""
        if name in self.builtin:
            found = self.builtin[name]
            return found if isinstance(found, str) else f"{type(found).__module__}:{name}"
        if name in self._read():
            return self._read()[name]
        raise RegistryError(self._skipped.get(name) or f"no {self.kind} named {name!r} (known: "
                            f"{', '.join(self.names())})")

    def load(self, name: str, paths: bool = False) -> Any:
        """The extension registered as ``name`` (imported once); with ``paths`` a dotted path
        ``package.module:Name`` names one too. Raises RegistryError with a one-line message."""
        if name not in self._loaded:
            found = self.builtin.get(name)
            if found is not None and not isinstance(found, str):
                return found
            if paths and not self.known(name) and name not in self._skipped and _DOTTED.fullmatch(name) \
                    and ("." in name or ":" in name):
                where = name
            else:
                where = self.where(name)
            self._loaded[name] = self._import(name, where)
        return self._loaded[name]

    def _import(self, name: str, where: str) -> Any:
        if where == name:  # a dotted path the configuration gives
            module, _, attribute = where.partition(":") if ":" in where else where.rpartition(".")
            try:
                return import_object(where)
            except ImportError as err:
                raise RegistryError(f"cannot import {module}: {err}") from None
            except AttributeError:
                raise RegistryError(f"{module} has no {attribute}") from None
        try:
            return import_object(where)
        except (Exception, SystemExit) as err:  # noqa: BLE001 - whatever a broken extension raises, say which
            raise RegistryError(f"the {self.kind} {name!r} ({where}) cannot be loaded: "
                                f"{type(err).__name__}: {err}") from None
