"""What sources need from the configuration on workers: logins and per-protocol settings.

The DoFns that call sources (discovery, reading) receive a :class:`SourceSettings` and install it
with :func:`use` in ``setup``; sources then ask :func:`login_for` for the login of a URL. Secrets
travel only here, never in a URL or a record, so they cannot reach the index, a log or the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from beamtrawl.transforms.values import Credential, credential_for


@dataclass(frozen=True)
class SourceSettings:
    credentials: tuple[Credential, ...] = ()
    smb_read_acls: bool = True  # read each file's security descriptor into Entry.groups
    smb_sid_names: tuple[tuple[str, str], ...] = ()  # SID → group name; unnamed SIDs stay SID strings
    imap_starttls: bool = True  # imap:// upgrades with STARTTLS before logging in
    imap_ca_file: str = ""  # certificates to trust for IMAP TLS; "" = the system's

    @classmethod
    def from_config(cls, config) -> SourceSettings:
        return cls(config.credentials, config.smb.read_acls, tuple(sorted(config.smb.sid_names.items())),
                   config.imap.starttls, config.imap.ca_file or "")


_current = SourceSettings()


def use(settings: SourceSettings | None) -> None:
    """Install the settings of this crawl in this worker process."""
    global _current
    _current = settings or SourceSettings()


def current() -> SourceSettings:
    return _current


def login_for(url: str) -> Credential | None:
    """The configured login for ``url`` (longest prefix), if any."""
    return credential_for(_current.credentials, url)
