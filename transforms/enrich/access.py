"""Access control at crawl time: which groups may read each document (regain's
CrawlerAccessController), decided between discovery and the freshness join (:mod:`transforms.enrich.assign`).

A controller answers ``groups(entry)`` with a list of group names, ``[]`` for a public document,
an :class:`Access` (groups, and the groups denied whatever else a searcher holds), or None for
"no opinion". Controllers are asked in configuration order and the first answer that
is not None wins; if none answers (or none is configured) the groups the source set stay (the SMB
source sets them from Windows ACLs). Group names are non-empty and hold no whitespace.

Built-ins, in configuration order under ``access_control:`` (keys: :mod:`pipeline.config.access` and
docs/configuration-reference.md): ``url_rules`` (the first rule whose prefix or regex matches decides),
``posix`` (below) and ``class: package.module:Controller`` with ``params`` (your own).

``posix`` decides with the kernel's rule (:class:`PosixOwnership`): a file whose every folder from
``/`` down a stranger may search and that a stranger may read is public (or gets
``world_readable_group``); others are readable by the users (``user:<name>``, ``user_prefix``) and
groups (``<group>``, ``group_prefix``) that may reach and read it, modes and POSIX ACLs counted;
``rename`` maps a resulting name to another (``{wheel: admins}``). A searcher is expected to name
their user and all their groups (``--groups user:bob,staff``). It stats each file once more on the
worker. A controller that fails on a document (a file that cannot be stat'ed, a bad name) makes
that document a reported failure; its indexed version stays as it is.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import re
import struct
from collections.abc import Sequence
from typing import NamedTuple

from beamtrawl.transforms.accept import rule_matched
from beamtrawl.transforms.records import EVERYONE
from beamtrawl.transforms.registry import Registry
from beamtrawl.transforms.sources import local_path
from beamtrawl.transforms.urls import is_under

GROUP_NAME = re.compile(r"\S+")


class UrlRules:
    """``[(UrlPattern, groups), ...]``: the first matching pattern gives the groups. A prefix matches
    by whole path segments (``/srv/hr`` is not a prefix of ``/srv/hrx``: a rule must not leak
    to a neighbour), a regex the whole URL as a person writes it (``.*/résumés/.*``)."""

    def __init__(self, rules):
        self.rules = tuple(rules)

    def groups(self, entry) -> Sequence[str] | None:
        for pattern, groups in self.rules:
            if is_under(entry.url, pattern.prefix) if pattern.prefix is not None else pattern.matches(entry.url):
                rule_matched(pattern)
                return list(groups)
        return None


class Access(NamedTuple):
    """A controller's full answer: who may read, and who may not whatever else they hold."""

    groups: Sequence[str]
    denied: Sequence[str] = ()


# POSIX ACL entry tags and permission bits (acl/libacl.h, the xattr's on-disk values).
_TAG_USER, _TAG_GROUP_OBJ, _TAG_GROUP, _TAG_MASK = 0x02, 0x04, 0x08, 0x10  # and USER_OBJ, OTHER: the mode
_READ, _SEARCH = 4, 1
_ACL_XATTR = "system.posix_acl_access"
_ACL_HEADER, _ACL_ENTRY = struct.Struct("<I"), struct.Struct("<HHI")


def read_acl(path: str) -> bytes:
    """The access ACL of ``path`` as the kernel stores it (``system.posix_acl_access``); b"" when it
    has none beyond its mode, or the file system keeps none. The default ACL plays no part in access."""
    try:
        return os.getxattr(path, _ACL_XATTR)
    except OSError as err:
        if err.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            return b""
        raise


class _Subject(NamedTuple):
    """Someone access is decided for: a local user, one member of one group only, or a stranger."""

    uid: int | None
    gids: frozenset[int]


class _Modes(NamedTuple):
    """What a file says about who may access it: owner, group, mode bits and access ACL."""

    uid: int
    gid: int
    mode: int
    acl: bytes


def _permits(subject: _Subject, file: _Modes, want: int) -> bool:
    """POSIX.1e's access check (what getfacl shows): the owner entry, else a named user entry, else
    the group entries (owning group and named groups: any that grants), else other. Root passes."""
    uid, gid, mode, acl = file
    if subject.uid == 0:
        return True
    if subject.uid == uid:
        return bool((mode >> 6) & want)
    users, groups, mask = {}, {gid: (mode >> 3) & 7}, 7
    if acl:
        for tag, perm, number in _ACL_ENTRY.iter_unpack(acl[_ACL_HEADER.size:]):
            if tag == _TAG_USER:
                users[number] = perm
            elif tag == _TAG_GROUP_OBJ:
                groups[gid] = perm
            elif tag == _TAG_GROUP:
                groups[number] = perm
            elif tag == _TAG_MASK:
                mask = perm
    if subject.uid in users:
        return bool(users[subject.uid] & mask & want)
    matched = [perm for number, perm in groups.items() if number in subject.gids]
    if matched:
        return any(perm & mask & want for perm in matched)
    return bool(mode & want)


class PosixOwnership:
    """Who may reach and read a local file: search (x) on every folder from ``/`` down and read on the
    file, by mode and POSIX ACL, decided for every local user (``user:<name>``), for one member of each
    group (``<group>``: membership alone grants it) and for a stranger (in no group: public).

    The answer lists the users and groups that may read; a document a stranger may read is public.
    Users who may not read, though one of their groups is listed (or the document is public), are
    denied by name, so a member of ``staff`` whose own entry forbids reading does not find it; a
    group whose entry forbids a public document is denied too (to a searcher naming only the group)
    unless one of its members may read it. Answers are cached per folder and per
    (owner, group, mode, ACL), so a tree costs about one stat and one getxattr per file. Users and
    groups are read from the system once per worker; a document no one may read (not even a user the
    system lists) is hidden (``denied: [EVERYONE]``).
    """

    def __init__(self, user_prefix: str = "user:", group_prefix: str = "",
                 world_readable_group: str | None = None, rename: dict | None = None):
        self.user_prefix, self.group_prefix = user_prefix, group_prefix
        self.world_readable_group = world_readable_group
        self.rename = dict(rename or {})
        self._subjects: list[tuple[str, _Subject]] | None = None  # (principal, subject); last: the stranger
        self._folders: dict[str, frozenset[int]] = {}  # folder → subjects that may reach into it
        self._checks: dict[tuple, frozenset[int]] = {}  # (_Modes, want) → subjects it permits
        self._answers: dict[frozenset[int], Access] = {}

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state):
        self.__init__(**state)

    def groups(self, entry) -> Access | None:
        path = local_path(entry.url)
        if path is None:
            return None
        readers = self._reach(os.path.dirname(path)) & self._check(path, _READ)
        if readers not in self._answers:
            self._answers[readers] = self._answer(readers)
        return self._answers[readers]

    def _reach(self, folder: str) -> frozenset[int]:
        """Subjects that may search every folder from ``/`` down to ``folder`` (symlinks resolved)."""
        if folder not in self._folders:
            real = os.path.realpath(folder)
            parent = os.path.dirname(real)
            above = self._reach(parent) if parent != real else frozenset(range(len(self._all())))
            self._folders[folder] = above & self._check(real, _SEARCH)
        return self._folders[folder]

    def _check(self, path: str, want: int) -> frozenset[int]:
        st = os.stat(path)
        key = (_Modes(st.st_uid, st.st_gid, st.st_mode & 0o777, read_acl(path)), want)
        if key not in self._checks:
            self._checks[key] = frozenset(n for n, (_name, subject) in enumerate(self._all())
                                          if _permits(subject, *key))
        return self._checks[key]

    def _all(self) -> list[tuple[str, _Subject]]:
        if self._subjects is None:
            users = [(self.user_prefix + u.pw_name, _Subject(u.pw_uid, frozenset(os.getgrouplist(u.pw_name, u.pw_gid))))
                     for u in pwd.getpwall()]
            groups = [(self.group_prefix + g.gr_name, _Subject(None, frozenset([g.gr_gid]))) for g in grp.getgrall()]
            self._subjects = [*users, *groups, ("", _Subject(None, frozenset()))]
        return self._subjects

    def _answer(self, readers: frozenset[int]) -> Access:
        subjects = self._all()
        stranger = len(subjects) - 1
        allowed = {self._name(subjects[n][0]) for n in readers if n != stranger}
        if not allowed:
            return Access([], [EVERYONE])
        public = stranger in readers
        reading_gids = set().union(*(subjects[n][1].gids for n in readers if subjects[n][1].uid is not None))
        denied = set()
        for n, (principal, subject) in enumerate(subjects[:stranger]):
            if n in readers:
                continue
            if subject.uid is None:  # a group whose membership alone forbids a public document, unless a
                if public and not subject.gids & reading_gids:  # member may read (non-readers: by name)
                    denied.add(self._name(principal))
            elif public or {self._name(p) for p, s in subjects if s.uid is None and s.gids & subject.gids} & allowed:
                denied.add(self._name(principal))
        if public:
            allowed = {self.world_readable_group} if self.world_readable_group else set()
        return Access(sorted(allowed), sorted(denied))

    def _name(self, principal: str) -> str:
        return self.rename.get(principal, principal)


class CustomController:
    """A controller class named by an entry point of ``beamtrawl.access`` or a dotted path, built with
    ``params`` on first use in each worker."""

    def __init__(self, path: str, params: dict):
        self.path, self.params = path, dict(params)
        self._controller = None

    def __getstate__(self):
        return {"path": self.path, "params": self.params}

    def __setstate__(self, state):
        self.__init__(state["path"], state["params"])

    def build(self):
        from beamtrawl.plugins.manager import construct  # built as plugins are
        if self._controller is None:
            self._controller = construct(REGISTRY.load(self.path, paths=True), self.params, self.path)
            if not callable(getattr(self._controller, "groups", None)):
                raise TypeError(f"{self.path} has no groups(entry) method")
        return self._controller

    def groups(self, entry) -> Sequence[str] | None:
        return self.build().groups(entry)


#: Controllers a ``class:`` entry names: the built-ins by their section's name, ``beamtrawl.access`` entry points,
#: dotted paths.
REGISTRY = Registry("access controller", "beamtrawl.access", {"url_rules": UrlRules, "posix": PosixOwnership})


def access_of(controllers, entry) -> Access:
    """The access of ``entry``: the first controller's answer that is not None, else the source's.
    An answer is a list of groups (nothing denied) or an :class:`Access`."""
    for controller in controllers:
        answer = controller.groups(entry)
        if answer is not None:
            break
    else:
        answer = Access(entry.groups, entry.denied)
    if not isinstance(answer, Access):
        answer = Access(answer)
    for names in answer:
        if isinstance(names, str) or not all(isinstance(g, str) and GROUP_NAME.fullmatch(g) for g in names):
            raise ValueError(f"group names must be non-empty and without spaces, got {list(names)!r}")
    return Access(sorted(set(answer.groups)), sorted(set(answer.denied)))
