"""Access control at crawl time: which groups may read each document (regain's
CrawlerAccessController), decided between discovery and the freshness join (:mod:`transforms.enrich.assign`).

A controller answers ``groups(entry)`` with a list of group names, ``[]`` for a public document,
or None for "no opinion". Controllers are asked in configuration order and the first answer that
is not None wins; if none answers (or none is configured) the groups the source set stay (the SMB
source sets them from Windows ACLs). Group names are non-empty and hold no whitespace.

Built-ins (``access_control:`` in the crawl YAML)::

    access_control:
      - url_rules:                   # the first rule whose prefix or regex matches decides
          - {prefix: /srv/docs/hr, groups: [hr]}
          - {regex: '.*/public/.*', groups: []}     # [] = public
      - posix: {}                    # local files: owner, group and mode
      - class: mypackage.module:Controller         # your own, built with params
        params: {...}

``posix`` maps a local file's mode to groups: world-readable files are public (or get
``world_readable_group``); others are readable by ``user:<owner>`` (``user_prefix``) and, if
group-readable, by ``<group>`` (``group_prefix``); ``rename`` maps a resulting name to another
(``{wheel: admins}``). Only the file's own mode counts, not the folders above it. It stats each file
once more on the worker. A controller that fails on a document (a file that cannot be stat'ed, a bad
name) makes that document a reported failure; its indexed version stays as it is.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
from collections.abc import Sequence
from typing import Any

from transforms.urls import is_under, url_to_path

_GROUP = re.compile(r"\S+")


class UrlRules:
    """``[(UrlPattern, groups), ...]``: the first matching pattern gives the groups. A prefix matches
    by whole path segments (``/srv/hr`` is not a prefix of ``/srv/hrx``: a rule must not leak
    to a neighbour), a regex the whole URL."""

    def __init__(self, rules):
        self.rules = tuple(rules)

    def groups(self, entry) -> Sequence[str] | None:
        for pattern, groups in self.rules:
            if is_under(entry.url, pattern.prefix) if pattern.prefix is not None else pattern.matches(entry.url):
                return list(groups)
        return None


class PosixOwnership:
    def __init__(self, user_prefix: str = "user:", group_prefix: str = "",
                 world_readable_group: str | None = None, rename: dict | None = None):
        self.user_prefix, self.group_prefix = user_prefix, group_prefix
        self.world_readable_group = world_readable_group
        self.rename = dict(rename or {})
        self._names: dict[tuple[str, int], str] = {}  # (kind, id) → name: one NSS lookup per id

    def groups(self, entry) -> Sequence[str] | None:
        if not entry.url.startswith("file:"):
            return None
        st = os.stat(url_to_path(entry.url))
        if st.st_mode & stat.S_IROTH:
            return [self.world_readable_group] if self.world_readable_group else []
        names = [self.user_prefix + self._name("user", st.st_uid)]
        if st.st_mode & stat.S_IRGRP:
            names.append(self.group_prefix + self._name("group", st.st_gid))
        return [self.rename.get(name, name) for name in names]

    def _name(self, kind: str, number: int) -> str:
        key = (kind, number)
        if key not in self._names:
            self._names[key] = (_user if kind == "user" else _group)(number)
        return self._names[key]


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


class CustomController:
    """A controller class named by a dotted path, built with ``params`` on first use in each worker."""

    def __init__(self, path: str, params: dict):
        self.path, self.params = path, dict(params)
        self._controller = None

    def __getstate__(self):
        return {"path": self.path, "params": self.params}

    def __setstate__(self, state):
        self.__init__(state["path"], state["params"])

    def build(self):
        from plugins.manager import PluginSpec, instantiate  # the same loader as plugins
        if self._controller is None:
            self._controller = instantiate(PluginSpec(self.path, 0, tuple(self.params.items())))
            if not callable(getattr(self._controller, "groups", None)):
                raise TypeError(f"{self.path} has no groups(entry) method")
        return self._controller

    def groups(self, entry) -> Sequence[str] | None:
        return self.build().groups(entry)


def groups_of(controllers, entry) -> list[str]:
    """The groups of ``entry``: the first controller's answer that is not None, else the source's."""
    for controller in controllers:
        answer = controller.groups(entry)
        if answer is not None:
            break
    else:
        answer = entry.groups
    if isinstance(answer, str) or not all(isinstance(g, str) and _GROUP.fullmatch(g) for g in answer):
        raise ValueError(f"group names must be non-empty and without spaces, got {list(answer)!r}")
    return sorted(set(answer))


def parse_access_control(r, raw: Any) -> tuple:
    """``access_control:`` → controllers (``r`` is pipeline.config's ``_Reader``)."""
    from pipeline.config import UrlPattern  # the whitelist's own prefix/regex matching

    controllers = []
    for i, entry in enumerate(r.seq(raw, "access_control")):
        path = f"access_control[{i}]"
        entry = r.mapping(entry, path, {"url_rules", "posix", "class", "params"})
        kinds = [k for k in ("url_rules", "posix", "class") if k in entry]
        if len(kinds) != 1:
            raise r.fail(path, "needs exactly one of 'url_rules', 'posix' or 'class'")
        if "params" in entry and kinds != ["class"]:
            raise r.fail(f"{path}.params", "applies only to 'class'")
        if "url_rules" in entry:
            rules = []
            for j, rule in enumerate(r.seq(entry["url_rules"], f"{path}.url_rules")):
                where = f"{path}.url_rules[{j}]"
                rule = r.mapping(rule, where, {"prefix", "regex", "groups"}, required={"groups"})
                if ("prefix" in rule) == ("regex" in rule):
                    raise r.fail(where, "needs exactly one of 'prefix' or 'regex'")
                pattern = UrlPattern(prefix=r.url(rule["prefix"], f"{where}.prefix") if "prefix" in rule else None,
                                     regex=r.regex(rule["regex"], f"{where}.regex") if "regex" in rule else None)
                rules.append((pattern, _group_names(r, rule["groups"], f"{where}.groups")))
            controllers.append(UrlRules(rules))
        elif "posix" in entry:
            where = f"{path}.posix"
            posix = r.mapping(entry["posix"] or {}, where,
                              {"user_prefix", "group_prefix", "world_readable_group", "rename"})
            rename = r.mapping(posix.get("rename") or {}, f"{where}.rename", set(posix.get("rename") or {}))
            for key, value in rename.items():
                _group_names(r, [str(key), value], f"{where}.rename.{key}")
            world = posix.get("world_readable_group")
            controllers.append(PosixOwnership(
                user_prefix=str(posix.get("user_prefix", "user:")), group_prefix=str(posix.get("group_prefix", "")),
                world_readable_group=_group_names(r, [world], f"{where}.world_readable_group")[0] if world else None,
                rename={str(k): v for k, v in rename.items()}))
        else:
            params = entry.get("params") or {}
            params = r.mapping(params, f"{path}.params", set(params) if isinstance(params, dict) else set())
            controller = CustomController(r.string(entry["class"], f"{path}.class"), params)
            try:
                controller.build()
            except Exception as err:  # noqa: BLE001 - any failure to build it is a configuration error
                key = "params" if getattr(err, "key", "") == "params" else "class"
                raise r.fail(f"{path}.{key}", str(err).splitlines()[0] if str(err) else type(err).__name__) from None
            controllers.append(controller)
    return tuple(controllers)


def _group_names(r, raw: Any, path: str) -> list[str]:
    names = r.seq(raw, path)
    for n, name in enumerate(names):
        if not isinstance(name, str) or not _GROUP.fullmatch(name):
            raise r.fail(f"{path}[{n}]" if len(names) > 1 else path,
                         f"a group name must be a non-empty word without spaces, got {name!r}")
    return list(names)
