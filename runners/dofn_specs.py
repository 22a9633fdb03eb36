"""Beam's state-and-timer introspection of a DoFn, done once per class instead of once per call.

``apache_beam.transforms.userstate.get_dofn_specs`` takes ``inspect.signature`` of every method of a DoFn
(some forty), and Beam calls it again and again for the same DoFn: building the graph (``ParDo``,
``to_runner_api``), and in every worker for every bundle processor it builds (``DoFnSignature``,
``validate_stateful_dofn``). A crawl's graph has about two hundred ParDos: measured for issue 27, some 1,600
calls and 54,000 signatures, seconds of CPU in the command and in each worker before the first document.

The specs come from the defaults of the methods' parameters (``DoFn.StateParam``, ``DoFn.TimerParam``), which
are the class's own unless an instance holds methods of its own (``beam.Map``'s wrapper holds the user's
function, and some DoFns keep bound methods): those are remembered per instance. Beam is pinned
(2.73.0): this replaces one of its functions (the FnApiRunner's callers look it up in its module; the old
DirectRunner's ``transform_evaluator``, which imported it by name, keeps Beam's own).
"""

from __future__ import annotations

import types
import weakref

_BY_CLASS: dict[type, tuple[frozenset, frozenset]] = {}
_BY_INSTANCE: dict[int, tuple[weakref.ref, tuple[frozenset, frozenset]]] = {}  # by id: a DoFn's own __eq__ is not asked


def _per_class(dofn) -> bool:
    """Whether ``dofn``'s specs are its class's. Beam introspects every attribute that is a bound method: an
    instance's own attribute counts when it is one, or when it hides one of the class's methods."""
    kind, own = type(dofn), getattr(dofn, "__dict__", None)
    if own is None or getattr(kind, "__slots__", ()):  # slots may hold methods too: not looked into here
        return False
    return not any(isinstance(value, types.MethodType) or isinstance(getattr(kind, name, None), types.FunctionType)
                   for name, value in own.items())


def _remembered(dofn, introspect) -> tuple[frozenset, frozenset]:
    """The specs of ``dofn``, introspected once per class or once per instance."""
    if _per_class(dofn):
        kind = type(dofn)
        if kind not in _BY_CLASS:
            _BY_CLASS[kind] = tuple(map(frozenset, introspect(dofn)))
        return _BY_CLASS[kind]
    key = id(dofn)
    held = _BY_INSTANCE.get(key)
    if held is not None and held[0]() is dofn:
        return held[1]
    specs = tuple(map(frozenset, introspect(dofn)))
    try:  # forgotten when the DoFn is gone (its id may then be another's)
        ref = weakref.ref(dofn, lambda _ref: _BY_INSTANCE.pop(key, None))
    except TypeError:  # no weak reference to it: asked every time
        return specs
    _BY_INSTANCE[key] = (ref, specs)
    return specs


def remember_dofn_specs() -> None:
    """Make ``get_dofn_specs`` answer from a cache: per class where the answer is the class's, else per
    instance (a DoFn is not changed once built; Beam asks about each one several times). Idempotent."""
    from apache_beam.transforms import userstate

    if getattr(userstate.get_dofn_specs, "_beamtrawl_remembered", False):
        return
    introspect = userstate.get_dofn_specs

    def get_dofn_specs(dofn):
        state, timers = _remembered(dofn, introspect)
        return set(state), set(timers)

    get_dofn_specs._beamtrawl_remembered = True
    get_dofn_specs.__wrapped__ = introspect  # Beam's own
    userstate.get_dofn_specs = get_dofn_specs  # is_stateful_dofn and validate_stateful_dofn call it by this name
