"""Who is searching: anonymous (public documents only), a user of the users file signed in with HTTP
Basic, or a user a trusted reverse proxy names in a header.

The users file has one line per user, ``name:hash:group,group``, written by ``beamtrawl user add``; an
administrator's line ends in ``:admin`` (``user add --admin``: they may ask the page why a document is or is
not in the index, whoever may see it).
A hash is ``scrypt$N$r$p$salt$key`` (hashlib.scrypt, a fresh 16-byte salt per user, base64), so a
stolen file gives no password without a brute force that scrypt makes slow. Sign-in failures are
slowed per client address and per user name, and hashes are handed out so that guesses cannot starve a
person signing in (:mod:`.signin`); an unknown name is hashed against a dummy, so it costs what a known
one does. A password is verified once per ``VERIFIED_SECONDS`` only (:class:`Verified`), since scrypt
costs ~50 ms of a core by design.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from beamtrawl.pipeline.serve.signin import HASH_SLOTS, Failures, HashSlots

log = logging.getLogger("beamtrawl.serve")

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # 16 MiB and ~50 ms per hash: OWASP's minimum for scrypt
SALT_BYTES = 16
NAME = re.compile(r"[^\s:,]{1,64}")  # a user or group name: no whitespace, colons or commas
VERIFIED_SECONDS = 300.0
VERIFIED_ENTRIES = 1024


class UsersError(ValueError):
    """The users file or a user's entry is not usable; the message names the file and line."""


@dataclass(frozen=True)
class Searcher:
    """Who is searching: ``name`` "" is anonymous; ``groups`` decide what they may see."""

    name: str = ""
    groups: tuple[str, ...] = ()
    admin: bool = False  # may ask /explain (never more documents: what they see is their groups')

    @property
    def signed_in(self) -> bool:
        return bool(self.name)


ANONYMOUS = Searcher()


@dataclass(frozen=True)
class User:
    name: str
    hash: str
    groups: tuple[str, ...]
    admin: bool = False


#: The last field of an administrator's line in the users file.
ADMIN = "admin"


def hash_password(password: str) -> str:
    """A salted scrypt hash of ``password``, as the users file stores it."""
    salt = os.urandom(SALT_BYTES)
    key = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P),
                     base64.b64encode(salt).decode(), base64.b64encode(key).decode()])


def password_matches(password: str, stored: str) -> bool:
    """Whether ``password`` gives ``stored`` (a :func:`hash_password` hash), compared in constant time."""
    try:
        kind, n, r, p, salt, key = stored.split("$")
        if kind != "scrypt":
            return False
        wanted = base64.b64decode(key)
        got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                             dklen=len(wanted), maxmem=256 * int(n) * int(r))
    except ValueError:  # a damaged hash matches nothing
        return False
    return hmac.compare_digest(got, wanted)


def read_users(path: str) -> dict[str, User]:
    """The users of a users file (none if it does not exist yet)."""
    if not os.path.exists(path):
        return {}
    users = {}
    try:
        with open(path, encoding="utf-8") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UsersError(f"{path}: cannot read the users file ({getattr(err, 'strerror', None) or err})") from None
    if mode & (stat.S_IWGRP | stat.S_IWOTH):  # whoever may write it may add themselves with any group
        raise UsersError(f"{path}: other users may write to the users file (mode {stat.S_IMODE(mode):o}); "
                         f"chmod 600 it")
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(":")
        if len(parts) not in (3, 4) or not NAME.fullmatch(parts[0]) or parts[3:] not in ([], [""], [ADMIN]):
            raise UsersError(f"{path}:{number}: not a line of a users file (name:hash:groups, or "
                             f"name:hash:groups:{ADMIN} for an administrator)")
        users[parts[0]] = User(parts[0], parts[1], tuple(g for g in parts[2].split(",") if g), parts[3:] == [ADMIN])
    return users


def add_user(path: str, name: str, password: str, groups: list[str], admin: bool = False) -> bool:
    """Add a user to the users file, or replace their password, groups and whether they are an administrator;
    True if they are new. The file is written whole to a temporary file and renamed, readable by its owner only."""
    for value in (name, *groups):
        if not NAME.fullmatch(value):
            raise UsersError(f"{value[:64]!r}: a user or group name is 1 to 64 characters without spaces, "
                             f"colons or commas")
    if not password:
        raise UsersError("the password is empty")
    users = read_users(path)
    new = name not in users
    users[name] = User(name, hash_password(password), tuple(groups), admin)
    _write_users(path, users)
    return new


def remove_user(path: str, name: str) -> bool:
    """Take a user out of the users file; False if there was no such user (the file is left as it was).
    A running ``beamtrawl serve`` reads the file again when it changes, so they cannot sign in any more."""
    users = read_users(path)
    if name not in users:
        return False
    del users[name]
    _write_users(path, users)
    return True


def _write_users(path: str, users: dict[str, User]) -> None:
    """The users file written whole to a temporary file and renamed, readable by its owner only."""
    text = "".join(f"{u.name}:{u.hash}:{','.join(u.groups)}{':' + ADMIN if u.admin else ''}\n" for u in users.values())
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def basic_credentials(header: str) -> tuple[str, str] | None:
    """(name, password) of an ``Authorization: Basic …`` header, None for any other or a malformed one."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        name, colon, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return (name, password) if colon else None


class Verified:
    """Passwords verified in the last VERIFIED_SECONDS, by a keyed digest of the header (never the
    password itself), so a signed-in person's every page does not cost a scrypt hash."""

    def __init__(self):
        self._key = os.urandom(32)
        self._seen: OrderedDict[bytes, tuple[float, Searcher]] = OrderedDict()
        self._lock = threading.Lock()  # sign-ins are checked in worker threads

    def _digest(self, header: str) -> bytes:
        return hmac.new(self._key, header.encode(), hashlib.sha256).digest()

    def get(self, header: str) -> Searcher | None:
        entry = self._seen.get(self._digest(header))
        return entry[1] if entry and time.monotonic() - entry[0] < VERIFIED_SECONDS else None

    def put(self, header: str, searcher: Searcher) -> None:
        with self._lock:
            self._seen[self._digest(header)] = (time.monotonic(), searcher)
            while len(self._seen) > VERIFIED_ENTRIES:
                self._seen.popitem(last=False)


class Doorkeeper:
    """Decides who is searching, from a request's ``Authorization`` header, the trusted proxy header
    and the address the request came from."""

    def __init__(self, users_file: str | None = None, trusted_header: str | None = None,
                 trusted_proxies: tuple[str, ...] = ()):
        if trusted_header and not trusted_proxies:
            raise UsersError("--trusted-header needs the reverse proxy's address (--trusted-proxy)")
        self.users_file, self.trusted_header = users_file, (trusted_header or "").lower()
        try:
            self.trusted_proxies = tuple(ipaddress.ip_network(p, strict=False) for p in trusted_proxies)
        except ValueError as err:
            raise UsersError(f"--trusted-proxy: {err}") from None
        self.verified, self.failures, self.slots = Verified(), Failures(), HashSlots()
        self._hashing = ThreadPoolExecutor(HASH_SLOTS, thread_name_prefix="password")  # never the searches'
        self._dummy = hash_password(os.urandom(16).hex())  # what an unknown name is checked against
        self._users: dict[str, User] = {}
        self._read_at: float | None = None
        self.users(strict=True)  # a broken users file stops the server at its start

    @property
    def can_sign_in(self) -> bool:
        return bool(self.users_file)

    def users(self, strict: bool = False) -> dict[str, User]:
        """The users file, read again whenever it changed (``beamtrawl user add`` while serving). A file
        broken while serving is one log line, and the users read before stay (``strict``: it raises)."""
        if not self.users_file:
            return {}
        try:
            stamp = os.stat(self.users_file).st_mtime_ns
        except OSError:
            stamp = None
        if stamp != self._read_at:
            self._read_at = stamp
            try:
                self._users = read_users(self.users_file)
            except UsersError as err:
                if strict:
                    raise
                log.error("%s; the users read before still sign in", err)
                return self._users
            self.verified = Verified()  # a changed password or group takes effect at once
        return self._users

    def checks_password(self, authorization: str, headers, peer: str) -> bool:
        """Whether :meth:`searcher` will verify a password for this request (an scrypt hash)."""
        if self.trusted_header and self._from_proxy(peer) and headers.get(self.trusted_header):
            return False
        return bool(authorization) and self.verified.get(authorization) is None

    def searcher(self, authorization: str, headers, peer: str) -> Searcher | None:
        """Who sends a request; None for credentials that are wrong (the caller answers 401, slowed)."""
        if self.trusted_header and self._from_proxy(peer) and headers.get(self.trusted_header):
            name = headers[self.trusted_header]
            user = self.users().get(name)
            return Searcher(name, user.groups, user.admin) if user else Searcher(name)
        if not authorization:
            return ANONYMOUS
        users = self.users()  # first: a changed file forgets the passwords verified before it
        known = self.verified.get(authorization)
        if known is not None:
            return known
        credentials = basic_credentials(authorization)
        if credentials is None:
            return None
        user = users.get(credentials[0])
        matches = password_matches(credentials[1], user.hash if user else self._dummy)  # the same cost
        if user is None or not matches:
            return None
        searcher = Searcher(user.name, user.groups, user.admin)
        self.verified.put(authorization, searcher)
        return searcher

    async def sign_in(self, authorization: str, headers, peer: str) -> Searcher | None:
        """:meth:`searcher` for a request whose password must be checked: admitted by the failures of its
        address and user name (or TooManyFailures), hashed when :class:`HashSlots` gives it a turn."""
        credentials = basic_credentials(authorization)
        name = credentials[0] if credentials else ""
        keys = self.failures.admit(peer, name)
        try:  # no turn (TooManyFailures) or a client that left: no check made, nothing counted
            async with self.slots.slot(self.failures.rank(peer, name)):
                found = await asyncio.get_running_loop().run_in_executor(
                    self._hashing, self.searcher, authorization, headers, peer)
            if found is None:
                await asyncio.sleep(self.failures.failed(keys))
            else:
                self.failures.trust(peer, name)
        finally:
            self.failures.release(keys)
        return found

    def _from_proxy(self, peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.trusted_proxies)
