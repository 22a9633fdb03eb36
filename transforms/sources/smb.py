"""SMB shares (``smb://host[:port]/share/path``) through smbprotocol (SMB 2/3).

Discovery lists folders to a budget as the file source does, with size and last-write time from
the directory listing itself (no request per file), plus one QUERY_INFO per file for its security
descriptor when ``smb.read_acls`` is on (its readers become ``Entry.groups``, see
:mod:`transforms.sources.smb_acl`). Start URLs name a server (``smb://host[:port]/``), a share or a
folder or file in it; a server's disk shares are listed by :mod:`transforms.sources.smb_shares` (srvsvc
over the same pooled connection) and walked from the next round on, as folders are. Reading streams
the file.

A server, share or folder that cannot be listed (server down, share offline, access denied) is reported as
"incomplete", so its documents stay in the index. "Access denied" is more: evidence that the readers
changed, so it is also reported as ACCESS_DENIED and the documents indexed below are hidden from every
searcher at once (transforms/freshness.py); so is a file whose ACL the crawler may no longer read or
that lets no one read. A server that is down or unreachable is no such evidence. Connections are opened on first use and pooled
per worker process (smbprotocol's connection cache: one connection per server, one session per
user, plus ``ACL_CONNECTIONS`` that read security descriptors), never one per document. Logins come from ``credentials:``; they are never put in URLs.

This module is the source as the rest of beamtrawl asks it (its settings, start URLs, default port); the work
with a server is :mod:`transforms.sources.smb_client`, imported with the first expansion or read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, ClassVar

from beamtrawl.transforms.fields import Flag, OrEmpty, Section, Text, matching
from beamtrawl.transforms.records import FrontierItem
from beamtrawl.transforms.sources.base import StartHints
from beamtrawl.transforms.sources.settings import SourceSettings
from pydantic import Field

if TYPE_CHECKING:
    import io


Sid = matching(r"S-1(-\d+)+", "must be a SID such as S-1-5-21-1004336348-1177238915-1001")


class SmbSettings(Section):
    """SMB shares: ACLs and SID names."""

    read_acls: Flag = True
    """read each file's Windows ACL into its groups"""
    sid_names: Annotated[dict[Sid, Text], OrEmpty] = Field(default_factory=dict)
    """the group name of a SID; others become groups spelled as the SID (S-1-5-21-…-1001)"""


class SmbSource:
    """``smb://host[:port]/[share[/path]]`` URLs: a server, a share, a folder or a file."""

    schemes = ("smb",)
    Settings = SmbSettings
    default_ports: ClassVar[dict[str, int]] = {"smb": 445}

    @staticmethod
    def start_hints(url: str) -> StartHints:
        return StartHints(login=True, lines=("smb:", "  read_acls: true              # each file's Windows ACL decides who finds it"))

    @staticmethod
    def start_problem(url: str) -> str:
        return "" if re.fullmatch(r"smb://[^/?#]+/[^?#]*", url) else "an smb:// start URL is smb://host[:port]/[share[/folder]]"

    def __init__(self, settings: SourceSettings):
        self.settings = settings

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """Yield Entry records for files, FrontierItem records for folders left to the next round and
        Event records for counts and problems (``follow_symlinks`` does not apply: the server resolves links)."""
        from beamtrawl.transforms.sources import smb_client  # smbprotocol only where a connection is made

        return smb_client.expand(item, rules, budget, self.settings)

    def open_document(self, url: str) -> io.BufferedReader:
        """A binary stream of the file's bytes, read in chunks as the reader asks for them."""
        from beamtrawl.transforms.sources import smb_client

        return smb_client.open_document(url, self.settings)
