"""Beam's named tuples made from a schema, unpickled by one class per schema instead of one per element.

A worker decodes a schema'd PCollection (``Listing`` records, for one) into a named tuple class Beam makes from
the schema, whose ``__reduce__`` pickles each element with the schema's bytes; wherever such elements travel
pickled (inside a grouped value, a tagged output), ``apache_beam.typehints.schemas._hydrate_namedtuple_instance``
builds a new class for every element it unpickles (``typing.NamedTuple``: ~0.25 ms each; a py-spy of an
unchanged 200,000-file re-crawl found ~0.5 CPU-s of it, one per folder). Beam is pinned (2.73.0): this replaces
that function in its module, under its name (so pickles still name Beam's), with one that remembers the class
per schema.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=256)
def _made(encoded_schema: bytes) -> type:
    from apache_beam.portability.api import schema_pb2
    from apache_beam.typehints import schemas
    from apache_beam.utils import proto_utils

    return schemas.named_tuple_from_schema(proto_utils.parse_Bytes(encoded_schema, schema_pb2.Schema))


def _hydrate(encoded_schema: bytes, values: tuple):
    return _made(encoded_schema)(*values)


def remember_row_types() -> None:
    from apache_beam.typehints import schemas

    _hydrate.__module__, _hydrate.__qualname__ = schemas.__name__, "_hydrate_namedtuple_instance"
    schemas._hydrate_namedtuple_instance = _hydrate
