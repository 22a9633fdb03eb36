"""What sources need from the configuration on workers: logins and per-protocol settings.

The driver builds one :class:`SourceSettings` from the configuration (:meth:`SourceSettings.from_config`);
each DoFn that calls sources (discovery, reading) takes it in its constructor and builds its
:class:`~beamtrawl.transforms.sources.Sources` from it in ``setup``, so every source instance holds
the settings it was made with — no module state to remember to set. Secrets travel only here, never
in a URL or a record, so they cannot reach the index, a log or the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from beamtrawl.transforms.values import Credential, credential_for


@dataclass(frozen=True)
class SourceSettings:
    """Defaults are written here once; the configuration schema reads them."""

    credentials: tuple[Credential, ...] = ()
    smb_read_acls: bool = True  # read each file's security descriptor into Entry.groups
    smb_sid_names: tuple[tuple[str, str], ...] = ()  # SID → group name; unnamed SIDs stay SID strings
    imap_starttls: bool = True  # imap:// upgrades with STARTTLS before logging in
    imap_ca_file: str = ""  # certificates to trust for IMAP TLS; "" = the system's
    http: object = None  # the configuration's http section (the web source: limits, politeness, robots.txt)
    url_cleaners: tuple = ()  # regexes cut from links before they are normalised (the web source)
    s3: object = None  # the configuration's s3 section (endpoint, timeouts, retries, groups); None: boto3's defaults

    @classmethod
    def from_config(cls, config) -> SourceSettings:
        return cls(config.credentials, config.smb.read_acls, tuple(sorted(config.smb.sid_names.items())),
                   config.imap.starttls, config.imap.ca_file or "", config.http, tuple(config.url_cleaners), config.s3)

    def login_for(self, url: str) -> Credential | None:
        """The configured login for ``url`` (longest prefix), if any."""
        return credential_for(self.credentials, url)
