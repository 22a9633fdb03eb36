"""Loading plugins and calling their hooks, in priority order, each failure isolated.

* **Where a plugin comes from** (``plugin:`` in the crawl YAML): a shipped plugin by name
  (``filesize_filter``, ``link_text_title``), a name in the entry-point group ``beamtrawl.plugins``
  (so a plugin distribution is installed with pip and named in the configuration), or a dotted path
  ``package.module:Name`` / ``package.module.Name``. A class is instantiated with the entry's
  ``params`` as keyword arguments; a module or other object takes no params.
* **Order**: higher ``priority`` runs first, as for preparators (ties keep configuration order; regain
  ran plugins the other way round). pluggy
  would call plugins in reverse registration order; we keep our own order instead, so
  ``tryfirst``/``trylast`` on an implementation are ignored.
* **Errors**: every hook implementation is called under its own ``try``: one that raises is logged,
  becomes a ``plugin_failed`` event (stage ``plugin:<hook>``) and the next plugin runs. pluggy's own
  ``hook.x()`` call would stop at the first exception.
* **Pickling**: :class:`PluginHost` is shipped to workers with the DoFns that use it but carries
  only the configuration; plugin objects are created in each process by :meth:`PluginHost.load`
  (called from ``DoFn.setup``, or lazily on first use). A plugin is therefore constructed several
  times per crawl (configuration check, driver, each worker): keep constructors cheap and free of
  side effects. On a cluster the plugin's distribution must be installed on the workers too
  (Beam's ``--requirements_file`` or ``--extra_package``).
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any

import pluggy
from beamtrawl.plugins import hookspecs
from beamtrawl.transforms.registry import Registry, RegistryError

ENTRY_POINT_GROUP = "beamtrawl.plugins"
#: Plugins that ship with beamtrawl, by the name the configuration uses.
SHIPPED = {
    "filesize_filter": "beamtrawl.plugins.filesize:FilesizeFilter",
    "link_text_title": "beamtrawl.plugins.link_text_title:LinkTextAsTitle",
}

log = logging.getLogger("beamtrawl")


class PluginLoadError(Exception):
    """The plugin cannot be found, imported or constructed; the message says why, in one line.
    ``key`` is the configuration key at fault (``plugin`` or ``params``)."""

    def __init__(self, message: str, key: str = "plugin"):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class PluginSpec:
    """One ``plugins:`` entry of the configuration (picklable: no plugin object in it)."""

    plugin: str  # shipped name, entry-point name or dotted path
    priority: int = 0
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        return self.plugin


#: The plugins of the configuration: shipped ones, entry points, and dotted paths (see the module's doc).
REGISTRY = Registry("plugin", ENTRY_POINT_GROUP, SHIPPED)


def resolve(name: str) -> Any:
    """The plugin class, module or object a configuration's ``plugin:`` names."""
    if not REGISTRY.known(name) and not REGISTRY.skipped(name) and "." not in name and ":" not in name:
        raise PluginLoadError(f"no plugin named '{name}' (known: {', '.join(REGISTRY.names())}; "
                              "or give package.module:Name)")
    try:
        return REGISTRY.load(name, paths=True)
    except RegistryError as err:
        raise PluginLoadError(str(err)) from None


def instantiate(spec: PluginSpec) -> Any:
    return construct(resolve(spec.plugin), dict(spec.params), spec.plugin)


def construct(target: Any, params: dict, label: str) -> Any:
    """A class built with ``params`` as keyword arguments; a module or other object as it is (no params)."""
    if inspect.isclass(target):
        try:
            return target(**params)
        except (TypeError, ValueError) as err:
            raise PluginLoadError(str(err), key="params") from None
    if params:
        raise PluginLoadError(f"{label} takes no params (it is not a class)", key="params")
    return target


def _manager(specs: tuple[PluginSpec, ...]) -> tuple[pluggy.PluginManager, list[tuple[str, Any]]]:
    pm = pluggy.PluginManager("beamtrawl")
    pm.add_hookspecs(hookspecs)
    plugins = []
    for n, spec in sorted(enumerate(specs), key=lambda pair: (-pair[1].priority, pair[0])):
        plugin = instantiate(spec)
        try:
            pm.register(plugin, name=f"{n}:{spec.label}")
        except (pluggy.PluginValidationError, ValueError) as err:
            raise PluginLoadError(str(err).splitlines()[0]) from None
        plugins.append((spec.label, plugin))
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as err:
        raise PluginLoadError(str(err).splitlines()[0]) from None
    return pm, plugins


class PluginHost:
    """The configured plugins of one crawl, as one process sees them."""

    def __init__(self, specs=()):
        self.specs = tuple(specs)
        self._impls: dict[str, list[tuple[str, Any]]] | None = None
        self._problems: list = []

    def __getstate__(self):
        return {"specs": self.specs}

    def __setstate__(self, state):
        self.__init__(state["specs"])

    def __bool__(self) -> bool:
        return bool(self.specs)

    def load(self) -> PluginHost:
        """Create this process's plugin objects (idempotent); raises :class:`PluginLoadError`."""
        if self._impls is None:
            pm, plugins = _manager(self.specs)
            impls: dict[str, list[tuple[str, Any]]] = {}
            for hook in hookspecs.HOOKS:
                by_plugin = {id(i.plugin): i for i in getattr(pm.hook, hook).get_hookimpls()}
                impls[hook] = [(label, by_plugin[id(p)]) for label, p in plugins if id(p) in by_plugin]
            self._impls = impls
        return self

    def implements(self, hook: str) -> list[str]:
        """Labels of the plugins implementing ``hook``, in call order."""
        return [label for label, _ in self.load()._impls[hook]]

    def fingerprint(self) -> list:
        """What of the plugin configuration can change documents (for the preparation fingerprint)."""
        document_plugins = {label for hook in hookspecs.DOCUMENT_HOOKS for label in self.implements(hook)}
        return [[s.plugin, s.priority, repr(s.params)] for s in self.specs if s.label in document_plugins]

    def _each(self, hook: str, kwargs: dict, where: str):
        """Yield (label, result) of every implementation of ``hook``; failures become problems."""
        if not self.specs:
            return
        for label, impl in self.load()._impls[hook]:
            try:
                result = impl.function(*(kwargs[name] for name in impl.argnames))
            except Exception as err:  # noqa: BLE001 - a plugin's failure must not stop the crawl
                from beamtrawl.transforms.records import event  # Beam's records: only once something failed
                reason = f"plugin {label} failed in {hook}: {type(err).__name__}: {err}".splitlines()[0]
                log.warning("%s (%s)", reason, where or "-")
                self._problems.append(event("plugin_failed", where, f"plugin:{hook}", reason))
                continue
            yield label, result

    def call(self, hook: str, where: str = "", **kwargs) -> list:
        """Call every implementation with ``kwargs``; the results that are not None, in call order.
        ``where`` (a URL) names the document in the report if a plugin fails."""
        return [result for _label, result in self._each(hook, kwargs, where) if result is not None]

    def any_true(self, hook: str, where: str = "", **kwargs) -> bool:
        """For ``check_dynamic_blacklist``: True as soon as one plugin says True."""
        return any(result is True for _label, result in self._each(hook, kwargs, where))

    def chain(self, hook: str, key: str, value, where: str = "", **kwargs):
        """Pass ``value`` (as argument ``key``) through every implementation; a result that is not
        None replaces it for the next one."""
        args = {**kwargs, key: value}  # one dict, read by _each at every call: later plugins see changes
        for _label, result in self._each(hook, args, where):
            if result is not None:
                args[key] = result
        return args[key]

    def problems(self) -> list:
        """The plugin failures since the last call, as report events (and forget them)."""
        problems, self._problems = self._problems, []
        return problems
