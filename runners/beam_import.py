"""Beam's import without the modules a crawl never uses.

``import apache_beam`` imports every IO module, MongoDB's among them, and ``pymongo`` (with its ``bson``) is
about a quarter of Beam's import time, in the command and again in every worker. Beam imports it inside
``try``/``except ImportError``, so it is refused while Beam loads and allowed again afterwards: a plugin
that imports ``pymongo`` itself still gets it (Beam's MongoDB IO, which beamtrawl does not use, stays off).
``boto3`` (with botocore and s3transfer, another sixth of the import) is refused the same way, and Beam's S3
file system imports it when it makes its first client: only a crawl with an ``s3://`` work folder or index
path needs it there (issue 27, target 2). ``azure.storage.blob`` (with azure.core's HTTP transports and aiohttp,
a fifth of the import; ``azure.core``, which alone is a twentieth, with it) and ``azure.identity`` (with msal),
which Beam's Azure file system (``azfs://``) imports at start-up, are refused and imported the same way when
that file system makes its first client.
Beam's Google Cloud Storage file system (with ``google.cloud.storage``) is imported when Beam's
``FileSystems`` is first asked for a ``gs://`` path (:data:`FILE_SYSTEMS`); BigQuery's IO, which
``apache_beam.io`` imports for names of its own, is refused (:data:`UNUSED_AT_START`). ``httplib2``, which
Beam's stager imports for downloads a local crawl never makes, is loaded when first used (:data:`LAZY`), and
beartype when Beam's typehints first use it (:data:`BEARTYPE`). docs/scaling.md has what each bought.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
import types

#: Modules Beam imports at start-up that no part of a crawl uses.
UNUSED = ("pymongo", "bson")
#: Modules Beam imports at start-up that only its S3 and Azure file systems use: imported when one makes its
#: first client.
ON_DEMAND = ("boto3", "azure.core", "azure.storage.blob", "azure.identity")
#: Beam's file systems whose modules import a cloud client library at start-up, by scheme: imported when
#: ``FileSystems`` is first asked for a path of that scheme.
FILE_SYSTEMS = {"gs": "apache_beam.io.gcp.gcsfilesystem"}
#: Beam modules that ``apache_beam.io`` imports at start-up, in one ``try``, for names of its own (BigQuery's and
#: Pub/Sub's transforms, the ``gcsio`` module and the cross-language IOs, with Google's client libraries) that
#: no part of a crawl uses: refused while Beam loads (the ``try`` then stops), importable afterwards.
UNUSED_AT_START = ("apache_beam.io.gcp.bigquery", "apache_beam.io.gcp.gcsio")
#: pyarrow, which Beam imports in ``try``s for its Parquet IO and its Arrow batch typehints (neither used by a
#: crawl), and ``pyarrow_hotfix`` (a fix for pyarrow < 14.0.1; pyproject.toml asks for 16 or newer): refused
#: while Beam loads; a Delta table imports pyarrow itself when it is used (0.1-0.2 CPU-s a crawl without one spares).
ARROW = ("pyarrow", "pyarrow_hotfix")
#: Modules Beam imports at start-up (``import httplib2`` in its stager's HTTP client, for downloading staged
#: files) that a local crawl never uses: loaded when first used.
LAZY = ("httplib2",)
#: Beam's typehints import ``is_subhint`` and ``BeartypeDoorException`` from beartype (a tenth of the import) for
#: ``is_consistent_with(..., use_beartype=True)``, which nothing in Beam or beamtrawl calls: stand-ins while Beam
#: loads (:func:`_beartype_stand_ins`).
BEARTYPE = ("beartype.door", "beartype.roar")
#: Names Beam's modules take at start-up (``from module import name``) for parts a crawl does not use: fastavro's
#: (Avro IO and Avro coder; with cramjam and lz4) and cryptography's ``Fernet`` (``GroupByEncryptedKey``; its Rust
#: bindings). Stand-ins while Beam loads (:class:`_OnFirstUse`): 9 MiB less in the command and in each forked worker.
ON_FIRST_USE = {"fastavro": ("parse_schema", "schemaless_reader", "schemaless_writer"),
                "fastavro.read": ("block_reader",), "fastavro.write": ("Writer",), "cryptography.fernet": ("Fernet",)}


def import_beam() -> None:
    """Import Beam with :data:`UNUSED`, :data:`ON_DEMAND`, :data:`FILE_SYSTEMS`, :data:`UNUSED_AT_START` and
    :data:`ARROW` refused and :data:`LAZY`, :data:`ON_FIRST_USE` and :data:`BEARTYPE` stood in for, unless something imported them already; its
    DoFn introspection then remembers each class's answer (runners/dofn_specs.py), and its unpickling of schema'd
    named tuples each schema's class (runners/row_types.py)."""
    from beamtrawl.runners.dofn_specs import remember_dofn_specs
    from beamtrawl.runners.row_types import remember_row_types

    if "apache_beam" in sys.modules:
        remember_dofn_specs()
        remember_row_types()
        return
    refused = [name for name in (*UNUSED, *ON_DEMAND, *FILE_SYSTEMS.values(), *UNUSED_AT_START, *ARROW)
               if name not in sys.modules]
    quiet = logging.getLogger("apache_beam.io.mongodbio")  # it warns that it found no bson
    quiet.disabled = True
    sys.modules.update(dict.fromkeys(refused))
    stand_ins = {name: _stand_in(name) for name in LAZY if name not in sys.modules}
    if not any(module.split(".")[0] in sys.modules for module in ON_FIRST_USE):
        stand_ins.update({module: _stand_in(module, names) for module, names in ON_FIRST_USE.items()})
    if not any(name in sys.modules for name in ("beartype", *BEARTYPE)):
        stand_ins.update(_beartype_stand_ins())
    sys.modules.update(stand_ins)
    try:
        import apache_beam  # noqa: F401
    finally:
        for name in refused:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:  # whatever imports it next gets the module itself
                del sys.modules[name]
        quiet.disabled = False
    _boto3_on_demand()
    _azure_on_demand()
    _file_systems_on_demand()
    remember_dofn_specs()
    remember_row_types()


def _beartype_stand_ins() -> dict[str, types.ModuleType]:
    """``beartype.door`` and ``beartype.roar`` for Beam's typehints' ``from … import``: an ``is_subhint`` that,
    at its first call, imports beartype and puts its own ``is_subhint`` and ``BeartypeDoorException`` in the
    typehints' place (an ``except`` looks its class up when an exception comes), then answers."""
    door = types.ModuleType("beartype.door", "beartype.door's is_subhint, imported at its first call")
    roar = types.ModuleType("beartype.roar", "a stand-in until beartype.door is imported")

    class BeartypeDoorException(Exception):
        """Never raised: beartype's own takes its place before is_subhint runs."""

    def is_subhint(subhint, superhint) -> bool:
        from apache_beam.typehints import typehints

        real = importlib.import_module("beartype.door").is_subhint
        typehints.is_subhint = real
        typehints.BeartypeDoorException = importlib.import_module("beartype.roar").BeartypeDoorException
        return real(subhint, superhint)

    door.is_subhint, roar.BeartypeDoorException = is_subhint, BeartypeDoorException
    return {"beartype.door": door, "beartype.roar": roar}


def _stand_in(name: str, names: tuple[str, ...] = ()) -> types.ModuleType:
    """A module that imports module ``name`` when one of its attributes is first asked for, and answers from it;
    ``names`` are there already, as stand-ins for ``from name import …`` (which would ask at once)."""
    stand_in = types.ModuleType(name, f"{name}, imported at its first use (runners/beam_import.py)")
    stand_in.__stand_in__ = True

    def real() -> types.ModuleType:
        parts = name.split(".")
        for prefix in (".".join(parts[:end]) for end in range(1, len(parts) + 1)):  # a package's too
            if getattr(sys.modules.get(prefix), "__stand_in__", False):
                del sys.modules[prefix]
        return _in_place_of(stand_in, importlib.import_module(name))

    def __getattr__(attribute: str):
        if attribute.startswith("__"):  # the import system's questions (``__path__``) are not a use
            raise AttributeError(attribute)
        return getattr(real(), attribute)

    stand_in.__getattr__ = __getattr__
    for attribute in names:
        setattr(stand_in, attribute, _OnFirstUse(real, attribute))
    return stand_in


def _in_place_of(stand_in, real):
    """``real``, put in place of ``stand_in`` wherever a module holds it (Beam's modules took it at their import):
    from then on they call it directly, and it is the class or function itself (``isinstance``, pickling)."""
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if isinstance(names, dict):
            for key in [key for key, value in list(names.items()) if value is stand_in]:
                names[key] = real
    return real


def _named(module: str, qualname: str):
    """What ``module`` calls ``qualname``: an :class:`_OnFirstUse`, unpickled."""
    return functools.reduce(getattr, qualname.split("."), importlib.import_module(module))


class _OnFirstUse:
    """A module's function or class, imported when first called or asked for an attribute (a class's own methods,
    ``Fernet.generate_key()``), and from then on in its place; pickled as the real one."""

    def __init__(self, module, name: str):
        self._where = (module, name)

    def _real(self):
        module, name = self._where
        return _in_place_of(self, getattr(module(), name))

    def __reduce__(self):
        real = self._real()
        return _named, (real.__module__, real.__qualname__)

    def __call__(self, *args, **kwargs):
        return self._real()(*args, **kwargs)

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self._real(), attribute)


def _boto3_on_demand() -> None:
    """Make Beam's S3 client import ``boto3`` when it is made, if Beam's import went without it."""
    from apache_beam.io.aws.clients.s3 import boto3_client

    if boto3_client.boto3 is not None or importlib.util.find_spec("boto3") is None:
        return  # imported already, or not installed: Beam says so when a client is made
    made = boto3_client.Client.__init__

    def __init__(self, *args, **kwargs):
        if boto3_client.boto3 is None:
            boto3_client.boto3 = importlib.import_module("boto3")
        made(self, *args, **kwargs)

    boto3_client.Client.__init__ = __init__


def _azure_on_demand() -> None:
    """Make Beam's Azure Blob Storage client import ``azure.storage.blob`` (and ``azure.core``'s exception its
    ``except``s name) and ``azure.identity`` (its default credentials) when it is made, if Beam's import went
    without them."""
    from apache_beam.internal.azure import auth
    from apache_beam.io.azure import blobstorageio

    if blobstorageio.AZURE_DEPS_INSTALLED or importlib.util.find_spec("azure.storage.blob") is None:
        return  # imported already, or not installed: Beam says so when a client is made
    made = blobstorageio.BlobStorageIO.__init__

    def __init__(self, *args, **kwargs):
        if not blobstorageio.AZURE_DEPS_INSTALLED:
            blob = importlib.import_module("azure.storage.blob")
            blobstorageio.ResourceNotFoundError = importlib.import_module("azure.core.exceptions").ResourceNotFoundError
            blobstorageio.BlobServiceClient, blobstorageio.ContentSettings = blob.BlobServiceClient, blob.ContentSettings
            blobstorageio.AZURE_DEPS_INSTALLED = True
        if not auth._AZURE_AUTH_AVAILABLE and importlib.util.find_spec("azure.identity") is not None:
            auth.DefaultAzureCredential = importlib.import_module("azure.identity").DefaultAzureCredential
            auth._AZURE_AUTH_AVAILABLE = True
        made(self, *args, **kwargs)

    blobstorageio.BlobStorageIO.__init__ = __init__


def _file_systems_on_demand() -> None:
    """Make Beam's ``FileSystems`` import the module of :data:`FILE_SYSTEMS` a path's scheme names before it
    looks for that path's file system."""
    from apache_beam.io.filesystems import FileSystems

    if getattr(FileSystems, "_beamtrawl_on_demand", False):
        return
    made = FileSystems.get_filesystem

    def get_filesystem(path):
        module = FILE_SYSTEMS.get(FileSystems.get_scheme(path) or "")
        if module and module not in sys.modules:
            try:
                importlib.import_module(module)
            except ImportError as err:  # as Beam's own import would have: the scheme stays unknown
                logging.getLogger(__name__).debug("%s: %s", module, err)
        return made(path)

    FileSystems.get_filesystem = staticmethod(get_filesystem)
    FileSystems._beamtrawl_on_demand = True
