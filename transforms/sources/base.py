"""The contract every source keeps: :class:`Source`, and the optional capabilities beside it.

A source serves one or more URL schemes. Discovery hands it frontier items (a start URL, a folder, a
share, a mailbox folder) to expand; the read stage asks it for a document's bytes. Anything else a
source can do is an optional capability, a method the pipeline or the driver looks for by name
(:func:`capable`):

* :class:`ParentUrls` (freshness): containers a URL lies in beyond its path segments;
* :class:`UnchangedState` (the driver, pipeline/unchanged.py): a cheap summary of a start URL's state;
* :class:`StartUrls` (the configuration): what is wrong with a start URL of its scheme;
* :class:`Starter` (``beamtrawl init``): what a starter file says about a start URL of its scheme;
* :class:`Deliver` and :class:`OwnAddress` (``beamtrawl serve``): how a searcher gets a document;
* :class:`Explains` (``beamtrawl explain``): what the source says of a URL now;
* :class:`LocalFiles` (anyone): the local path of a URL whose documents are files of this machine;
* :class:`Probe` (``crawl --dry-run``): reach a start URL without expanding it;
* :class:`ReadsAhead` (the read stage): how many of its documents a worker may read at once;
* :class:`ByHost` (discovery): crawl all of a round's items of one host in one call, with the index's
  state of that host's documents at hand — politeness needs every request to a host in one place.

A source is made once per worker process and settings (:class:`~beamtrawl.transforms.sources.Sources`)
with the crawl's :class:`~beamtrawl.transforms.sources.settings.SourceSettings`; it opens its clients
itself, on first use. Its methods run on workers, possibly more than once for one item when a bundle is
retried. A problem with one item or document is an Event (``expand``) or an OSError (``open_document``),
never anything else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, BinaryIO, ClassVar, NamedTuple, Protocol

from beamtrawl.transforms.records import Entry, Event, FrontierItem

if TYPE_CHECKING:  # settings read the configuration's value types; the contract needs none of it at run time
    from beamtrawl.transforms.sources.settings import SourceSettings


class Visited(str):
    """A URL a :class:`ByHost` source has fetched: later discovery rounds must not fetch it again."""

    route = "visited"


class Source(Protocol):
    """A kind of place documents live in, reached by URL."""

    #: The URL schemes it serves; its registration (built-in table or entry point) names each one.
    schemes: ClassVar[tuple[str, ...]]
    #: Its settings, if it has any: a :class:`~beamtrawl.transforms.fields.Section` model whose every key has a
    #: default, checked as the crawl file's top-level section named after ``schemes[0]`` (``smb:``) and documented
    #: in the generated reference; an instance reads its own with ``settings.of(type(self))``.
    Settings: ClassVar[type | None]
    #: Optional: the port each of its schemes means when a URL names none (``{"smb": 445}``). Normalisation drops
    #: it (transforms/urls.py), so ``smb://h:445/x`` and ``smb://h/x`` are one document with one id.
    default_ports: ClassVar[Mapping[str, int]]
    #: Optional: the characters that, right after a container's URL, begin something inside it besides "/" (IMAP,
    #: RFC 5092: ``imap://h/F;UIDVALIDITY=n/;UID=m`` lies in ``imap://h/F``), for the one containment rule.
    inside_marks: ClassVar[str]

    def __init__(self, settings: SourceSettings) -> None: ...

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool,
               budget: int | None) -> Iterator[Entry | FrontierItem | Event]:
        """Expand one frontier item: Entry records for documents, FrontierItem records for containers left
        to the next discovery round (those not reached once ``budget`` entries are listed; with ``budget``
        None, none), Event records for counts and problems. Every URL passes ``rules.decide`` first. A
        container that cannot be listed is an ``incomplete`` event with its URL, which keeps its documents."""
        ...

    def open_document(self, url: str) -> BinaryIO:
        """A binary stream of the document's bytes; raises OSError with a one-line reason."""
        ...


class ParentUrls(Protocol):
    @staticmethod
    def parent_urls(url: str) -> Iterable[str]:
        """The containers ``url`` lies in that its path segments do not show, so freshness keeps a document
        when one of them was not listed completely (IMAP: ``imap://h/F;UIDVALIDITY=n/;UID=1`` is in
        ``imap://h/F``). A static method: freshness asks without settings."""
        ...


class UnchangedState(Protocol):
    def unchanged_state(self, url: str, rules) -> dict[str, list[int]]:
        """For start URL ``url``: per container URL, numbers that change whenever a document the crawl would
        find in it changes, the last being how many documents it holds; cheap (no listing). Raises on any
        failure (the pipeline then runs)."""
        ...


class ByHost(Protocol):
    def expand_host(self, host: str, items: list[FrontierItem], known: dict, rules) -> Iterator:
        """Crawl ``host`` (``scheme://netloc``) from a round's ``items`` on it; ``known`` maps URL →
        SnapshotEntry of its indexed documents. Yields what ``expand`` yields plus :class:`Visited` URLs.
        Discovery then never calls ``expand`` for this source's URLs."""
        ...


class StartUrls(Protocol):
    @staticmethod
    def start_problem(url: str) -> str:
        """What is wrong with ``url`` as a start URL, as the configuration says it ("" if nothing): a check the
        file gets before the crawl runs. A static method: the configuration asks without settings."""
        ...


class StartHints(NamedTuple):
    """What ``beamtrawl init`` writes for one start URL (:class:`Starter`); the defaults are a source's without one."""

    index: bool = False  # the start URL is itself a document (a page, a file, an object)
    prefix: str = ""  # its whitelist prefix; "": the URL itself
    login: bool = False  # it needs a credentials entry (the password read from an environment variable)
    lines: tuple[str, ...] = ()  # YAML lines with comments: its section, keys that matter for it; (): its
    # section with every key commented out at its default, generated from ``Settings``


class Starter(Protocol):
    @staticmethod
    def start_hints(url: str) -> StartHints:
        """What the starter file says about start URL ``url`` (``beamtrawl init``). A static method."""
        ...


class NotIndexed(OSError):
    """The document at its place is no longer the one that was indexed (a file changed, replaced by a symbolic
    link, a FIFO or a device): its groups were decided for another, so it is not sent to a searcher."""


class Deliver(Protocol):
    def deliver(self, stored, follow_symlinks: bool) -> BinaryIO:
        """The bytes of indexed document ``stored`` (its URL, size and modification time) for a searcher, only if
        it is still the document that was indexed, else :class:`NotIndexed`. Without it, ``open_document``."""
        ...


class SignedAddress(Protocol):
    def signed_address(self, stored, disposition: str, content_type: str) -> str:
        """A short-lived address at which a searcher's browser fetches indexed document ``stored`` from its store
        itself (sent with ``disposition`` and ``content_type``, whatever was written there since), or "": deliver
        it through ``deliver`` / ``open_document``. Asked after the access check; raises FileNotFoundError for a
        document no longer there."""
        ...


class OwnAddress(Protocol):
    @staticmethod
    def own_address(url: str) -> str:
        """The address a searcher's browser opens the document at by itself (a web page's URL), or "": the
        search page then links there and never delivers the document. A static method."""
        ...


class LocalFiles(Protocol):
    @staticmethod
    def local_path(url: str) -> str:
        """The path of ``url`` in this machine's file system, for what only local files have (a path to show, POSIX
        permissions, a size on disk). A static method."""
        ...


class Explains(Protocol):
    def explain(self, url: str) -> list[str]:
        """What the source says of ``url`` now, one line each (a web page: its host's robots.txt verdict), for
        ``beamtrawl explain``; a line that says the crawl would decline it starts with ``declined:``."""
        ...


class Probe(Protocol):
    def probe(self, url: str) -> str:
        """Reach start URL ``url`` alone, with the crawl's logins and limits: "" if it answered, else why not
        (one line). For a source whose ``expand`` does far more than reach its item (a web source crawls the
        host); ``crawl --dry-run`` otherwise looks at the first records of ``expand``."""
        ...


class ReadsAhead(Protocol):
    def reads_ahead(self) -> int:
        """How many documents a worker's bundle may read at once through ``open_document`` (threads of one
        process: the source's clients must allow it), for a source whose reads mostly wait on a network; 1: one
        after the other. Without it, one after the other."""
        ...


def capable(source, capability: type) -> bool:
    """Does ``source`` (a class or an instance) offer ``capability``, one of the one-method protocols above?"""
    name = next(n for n in vars(capability) if not n.startswith("_"))
    return callable(getattr(source, name, None))
