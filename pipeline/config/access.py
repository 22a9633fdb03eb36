"""The ``access_control:`` section: the controllers of :mod:`transforms.enrich.access`, asked in order.

::

    access_control:
      - url_rules:                   # the first rule whose prefix or regex matches decides
          - {prefix: /srv/docs/hr, groups: [hr]}
          - {regex: '.*/public/.*', groups: []}     # [] = public
      - posix: {}                    # local files: every folder's and the file's mode and ACL
      - class: mypackage.module:Controller         # your own, built with params
        params: {...}
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from beamtrawl.transforms.enrich.access import GROUP_NAME, CustomController, PosixOwnership, UrlRules
from beamtrawl.transforms.fields import (
    Items,
    OrEmpty,
    Problem,
    Regex,
    Section,
    Text,
    Url,
    exactly_one,
    fail,
)
from beamtrawl.transforms.values import UrlPattern
from pydantic import BeforeValidator, Field, model_validator

_POSIX = {name: p.default for name, p in inspect.signature(PosixOwnership).parameters.items()}


def _group_names(names: Any) -> Any:
    for n, name in enumerate(names if isinstance(names, list) else ()):
        if not isinstance(name, str) or not GROUP_NAME.fullmatch(name):
            raise fail(f"a group name must be a non-empty word without spaces, got {name!r}",
                       at=f"[{n}]" if len(names) > 1 else "")
    return names


GroupNames = Annotated[tuple[str, ...], BeforeValidator(_group_names), Field(json_schema_extra={"format": "group names"})]
GroupName = Annotated[str, BeforeValidator(lambda name: _group_names([name])[0])]


class UrlRule(Section):
    """Documents under ``prefix`` (by whole path segments) or matching ``regex`` get ``groups``."""

    prefix: Url | None = None
    """a URL or path prefix, matched by whole segments"""
    regex: Regex | None = None
    """a regex matching the whole URL"""
    groups: GroupNames
    """the groups that may read the documents; []: public"""

    _one_of = exactly_one("prefix", "regex")


class PosixSection(Section):
    """Local files: who may reach and read each file by mode and POSIX ACL, every folder from / counted."""

    user_prefix: str = _POSIX["user_prefix"]
    """prefix of a user's group name (user:bob)"""
    group_prefix: str = _POSIX["group_prefix"]
    """prefix of a group's name"""
    world_readable_group: GroupName | None = _POSIX["world_readable_group"]
    """the group a file anyone may read gets; nothing: public"""
    rename: Annotated[dict[Annotated[GroupName, BeforeValidator(str)], GroupName], OrEmpty] = Field(default_factory=dict)
    """resulting names mapped to others ({wheel: admins})"""


class AccessEntry(Section):
    """One controller: exactly one of ``url_rules``, ``posix`` or ``class``."""

    url_rules: Annotated[tuple[UrlRule, ...], Items] | None = None
    """rules by URL, the first that matches decides"""
    posix: PosixSection | None = None
    """groups from the files' modes and POSIX ACLs"""
    class_: Text | None = Field(None, alias="class")
    """your controller class, pkg.module:Class or a beamtrawl.access entry point, with a groups(entry) method"""
    params: Annotated[dict[str, Any], OrEmpty] | None = None
    """keyword arguments of ``class``"""

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, raw):
        if isinstance(raw, dict):
            if sum(k in raw for k in ("url_rules", "posix", "class")) != 1:
                raise fail("needs exactly one of 'url_rules', 'posix' or 'class'")
            if "class" in raw and raw["class"] is None:
                raise fail("must be a non-empty string, got nothing", at=".class")
            if "params" in raw and "class" not in raw:
                raise fail("applies only to 'class'", at=".params")
            if "posix" in raw and raw["posix"] is None:
                raw = {**raw, "posix": {}}
            if "url_rules" in raw and raw["url_rules"] is None:  # no rules, as a list written as nothing
                raw = {**raw, "url_rules": []}
        return raw

    def controller(self, where: str):
        if self.url_rules is not None:
            return UrlRules((UrlPattern(prefix=r.prefix, regex=r.regex, where=f"{where}.url_rules[{j}]"),
                             list(r.groups)) for j, r in enumerate(self.url_rules))
        if self.posix is not None:
            return PosixOwnership(**self.posix.model_dump())
        controller = CustomController(self.class_, self.params or {})
        try:
            controller.build()
        except Exception as err:  # noqa: BLE001 - any failure to build it is a configuration error
            key = "params" if getattr(err, "key", "") == "params" else "class"
            raise Problem(f"{where}.{key}", str(err).splitlines()[0] if str(err) else type(err).__name__) from None
        return controller


def controllers(entries: tuple[AccessEntry, ...]) -> tuple:
    return tuple(entry.controller(f"access_control[{i}]") for i, entry in enumerate(entries))
