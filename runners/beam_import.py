"""Beam's import without the modules a crawl never uses.

``import apache_beam`` imports every IO module, MongoDB's among them, and ``pymongo`` (with its ``bson``) is
about a quarter of Beam's import time, in the command and again in every worker. Beam imports it inside
``try``/``except ImportError``, so it is refused while Beam loads and allowed again afterwards: a plugin
that imports ``pymongo`` itself still gets it (Beam's MongoDB IO, which beamtrawl does not use, stays off).
"""

from __future__ import annotations

import logging
import sys

#: Modules Beam imports at start-up that no part of a crawl uses.
UNUSED = ("pymongo", "bson")


def import_beam() -> None:
    """Import Beam with :data:`UNUSED` refused, unless something imported them already; its DoFn
    introspection then remembers each class's answer (runners/dofn_specs.py)."""
    from beamtrawl.runners.dofn_specs import remember_dofn_specs

    if "apache_beam" in sys.modules:
        remember_dofn_specs()
        return
    refused = [name for name in UNUSED if name not in sys.modules]
    quiet = logging.getLogger("apache_beam.io.mongodbio")  # it warns that it found no bson
    quiet.disabled = True
    sys.modules.update(dict.fromkeys(refused))
    try:
        import apache_beam  # noqa: F401
    finally:
        for name in refused:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        quiet.disabled = False
    remember_dofn_specs()
