"""The ``auxiliary_fields:`` section: extra index fields computed from a document's URL or path
(regain's ``auxiliaryField``; semantics in :mod:`transforms.enrich.auxfields`).

::

    auxiliary_fields:
      - {name: project, regex: '/projects/([^/]*)/', source: path}
      - {name: doctype, regex: '/hr/', value: Confidential, lower_case: false}
"""

from __future__ import annotations

import re
from typing import Literal

from beamtrawl.transforms.enrich.auxfields import DEFAULT_AUX_FIELDS, RESERVED, AuxFieldSpec
from beamtrawl.transforms.fields import Count, Flag, Problem, Regex, Section, Text, fail, matching
from pydantic import Field, field_validator, model_validator

FieldName = matching(r"[a-z][a-z0-9_]*", "must be lower case letters, digits or '_', starting with a letter, got "
                                         "{value!r}")


class AuxFieldEntry(Section):
    """A field computed from the URL (or a file's path): a regex group or a fixed value."""

    name: FieldName
    """the field's name: lower case letters, digits or '_', starting with a letter"""
    regex: Regex
    """searched anywhere in the URL or path"""
    group: Count | None = Field(None, ge=0)
    """the regex group that is the value; not given: 1, or 0 for a regex without groups"""
    value: Text | None = None
    """a fixed value, when the regex matches (instead of ``group``)"""
    source: Literal["url", "path"] = AuxFieldSpec.source
    """url, or path: the decoded local path of a file: URL"""
    case_sensitive: Flag = False
    """match the regex case-sensitively"""
    lower_case: Flag = AuxFieldSpec.lower_case
    """lower-case the value"""
    store: Flag = AuxFieldSpec.store
    """returned with hits"""
    index: Flag = AuxFieldSpec.index
    """searchable as name:value"""
    tokenize: Flag = AuxFieldSpec.tokenize
    """matched by words rather than as one exact value"""

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if name in RESERVED:
            raise fail(f"'{name}' is a standard field of every document")
        return name

    @field_validator("value", mode="before")
    @classmethod
    def _as_text(cls, value):
        return value if value is None else str(value)

    @model_validator(mode="after")
    def _group_or_value(self):
        if self.group is not None and self.value is not None:
            raise fail("needs either 'group' (a regex group) or 'value' (a fixed value), not both")
        if self.value is None and (self.group or 0) > self.regex.groups:
            raise fail(f"the regex has {self.regex.groups} groups, so there is no group {self.group}", at=".group")
        return self

    def spec(self) -> AuxFieldSpec:
        regex = re.compile(self.regex.pattern, 0 if self.case_sensitive else re.IGNORECASE)
        group = self.group if self.group is not None else 1 if regex.groups else 0
        return AuxFieldSpec(self.name, regex, group, self.value, self.source, self.lower_case, self.store,
                            self.index, self.tokenize)


def aux_field_specs(entries: tuple[AuxFieldEntry, ...]) -> tuple[AuxFieldSpec, ...]:
    """regain's default fields, then the configured ones; a configured field named like a default replaces it."""
    fields = {spec.name: spec for spec in DEFAULT_AUX_FIELDS}
    configured: set[str] = set()
    for i, entry in enumerate(entries):
        if entry.name in configured:
            raise Problem(f"auxiliary_fields[{i}].name", f"'{entry.name}' is defined twice")
        configured.add(entry.name)
        fields[entry.name] = entry.spec()
    return tuple(fields.values())
