"""What sources need from the configuration on workers: logins, URL cleaners and each source's own section.

A source that has settings declares them as a pydantic model, its class attribute ``Settings`` (a
:class:`~beamtrawl.transforms.fields.Section`); the crawl file's top-level section named after the source's
first scheme (``smb:``, ``imap:``, ``memo:``) is checked against it, and its reference entry is generated
from it. The driver builds one :class:`SourceSettings` from the configuration (:meth:`SourceSettings.from_config`);
each DoFn that calls sources (discovery, reading) takes it in its constructor and builds its
:class:`~beamtrawl.transforms.sources.Sources` from it in ``setup``, so every source instance holds
the settings it was made with — no module state to remember to set. Secrets travel only here, never
in a URL or a record, so they cannot reach the index, a log or the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beamtrawl.transforms.values import Credential, credential_for


def section_name(source: type) -> str:
    """The crawl file's section of ``source``'s settings: its first scheme (``http`` for http and https)."""
    return str(source.schemes[0]).lower()


@dataclass(frozen=True)
class SourceSettings:
    credentials: tuple[Credential, ...] = ()
    url_cleaners: tuple = ()  # regexes cut from links before they are normalised (the web source)
    sections: tuple[tuple[str, Any], ...] = ()  # section name → the source's checked Settings, as the file gave them
    deadline: float | None = None  # seconds a searcher waits (serve's /document): a store's clients give up within

    @classmethod
    def from_config(cls, config) -> SourceSettings:
        return cls(config.credentials, tuple(config.url_cleaners), config.sections)

    def of(self, source: type) -> Any:
        """``source``'s settings: its section as the file gave it, else its ``Settings`` defaults (None without)."""
        model = getattr(source, "Settings", None)
        given = dict(self.sections).get(section_name(source))
        return given if isinstance(given, model or ()) else model() if model is not None else None

    def login_for(self, url: str) -> Credential | None:
        """The configured login for ``url`` (longest prefix), if any."""
        return credential_for(self.credentials, url)
