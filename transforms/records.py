"""The records that flow between stages, each a schema'd NamedTuple encoded with Beam's RowCoder.

Workers decode rows into generated classes with the same fields, so stages read fields by name
and never test ``isinstance``. This module does not load Beam (0.7 s): the driver reads the index
and the sources without it when a crawl needs no pipeline; whoever builds one calls
:func:`use_row_coders` first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

#: In ``denied``: every searcher. A document denied to EVERYONE is hidden (the crawler saw evidence
#: that its readers changed but could not tell who they are now); no searcher holds a group of this name.
EVERYONE = "*"
#: The Event kind a source reports for a folder, share or server that now answers "access denied":
#: evidence that the documents indexed below it may no longer be shown (transforms/freshness.py).
ACCESS_DENIED = "access_denied"
#: A count by MIME type is the count's kind, this, and the type (``unsupported@image/png``): the report lists
#: which types no preparator read, and how many of each.
BY_TYPE = "@type:"


class FrontierItem(NamedTuple):
    """A container to expand in a discovery round: a folder, a share, a page, a mailbox folder."""

    url: str
    root: str  # the start URL it was found under
    depth: int  # levels below the root
    identity: str  # what de-duplication compares: (device:inode) for folders, else the URL
    ancestors: Sequence[str]  # identities above it, to cut symlink loops
    source_url: str
    link_text: str

    route = "frontier"  # not a field: the output a discovery step sends it to (stages never test isinstance)


class AuxValue(NamedTuple):
    """One auxiliary field of a document, with how the index keeps it (transforms/enrich/auxfields.py)."""

    name: str
    value: str
    store: bool  # returned with hits
    index: bool  # searchable as name:value
    tokenize: bool  # matched by words instead of as one exact value


class Entry(NamedTuple):
    """A discovered document. Sources that must fetch to discover (web pages) carry the bytes."""

    id: str
    url: str
    root: str
    depth: int
    size: int
    mtime_ns: int
    identity: str  # (device:inode) of a file when symlinks are followed, else ""
    content: bytes | None
    mimetype: str  # what the source said (HTTP Content-Type), else ""
    outlinks: Sequence[str]
    etag: str
    http_last_modified: str
    source_url: str
    link_text: str
    groups: Sequence[str] = ()  # who may read it (access control); empty: everyone
    name: str = ""  # its file name where the URL does not end in it (an IMAP attachment's is its section)
    denied: Sequence[str] = ()  # who may not, whatever ``groups`` says (EVERYONE: no one)
    in_index: bool = False  # the index holds an earlier version of it (set by Freshness for a changed one)
    listing: str = ""  # the listing that yielded it (:attr:`Listing.listing`), else ""
    fields: Sequence[AuxValue] = ()  # what the source says of it beyond these (an object's metadata), as fields

    route = "entries"  # not a field: the output a discovery step sends it to

    def listed_by(self, listing: str) -> Entry:
        """This entry marked as listing ``listing``'s: ``_replace(listing=…)`` without its keyword
        machinery, three times slower, paid once per file listed."""
        return tuple.__new__(Entry, (*self[:_LISTING], listing, *self[_LISTING + 1:]))


_LISTING = Entry._fields.index("listing")


class Listing(NamedTuple):
    """The evidence a delete needs (transforms/listings.py): what one listing of a container (folder, share,
    mailbox folder, web host) saw, or — ``listed`` false — how many of its entries reached the freshness
    join. A document is deleted only if such evidence shows its container complete and it absent."""

    url: str  # the container, as :func:`~beamtrawl.transforms.urls.container_key` spells it ("" in an arrival)
    listing: str  # which listing: a container may be listed more than once (a web host in several rounds)
    listed: bool  # the listing's own record (else an arrival count)
    documents: int  # entries the listing yielded (or, for an arrival count, that arrived)
    children: Sequence[str] = ()  # containers below it that the listing handed on to be listed

    route = "listings"  # not a field: the output a discovery step sends it to


def arrival(listing: str, documents: int = 1) -> Listing:
    """How many entries of ``listing`` (an :attr:`Entry.listing`) reached the freshness join."""
    return Listing("", listing, False, documents, [])


class SnapshotEntry(NamedTuple):
    """What the freshness join needs to know about a document already in the index."""

    id: str
    url: str
    size: int
    mtime_ns: int
    prep_fingerprint: str
    content_hash: str
    etag: str
    http_last_modified: str
    groups: Sequence[str] = ()
    outlinks: Sequence[str] = ()  # links of a web page, to go on crawling when it answers 304
    denied: Sequence[str] = ()
    root: str = ""  # the start URL it was found under: a root unavailable in a crawl keeps it


class RawDocument(NamedTuple):
    """A document's bytes and sniffed MIME type, on its way to a preparator."""

    entry: Entry
    mimetype: str
    data: bytes
    metadata_only_reason: str  # why it is indexed by metadata only (larger than max_file_size, unreadable), else ""


class IndexDoc(NamedTuple):
    """One document as every index target stores it (regain's fields plus freshness state)."""

    id: str
    url: str
    root: str
    title: str
    content: str
    summary: str
    headlines: str
    metadata: str
    mimetype: str
    extension: str
    filename: str
    path: str
    size: int
    mtime_ns: int
    last_modified: str  # ISO 8601, UTC
    groups: Sequence[str]
    preparation_error: str
    content_hash: str
    etag: str
    http_last_modified: str
    prep_fingerprint: str
    outlinks: Sequence[str]
    indexed_at: str
    aux: Sequence[AuxValue] = ()  # auxiliary fields (regain's auxiliaryField)
    denied: Sequence[str] = ()  # searchers holding any of these do not see it, whatever ``groups`` says
    furniture: str = ""  # page furniture (Prepared.furniture): searched with a low weight, never in snippets
    passages: Sequence[int] = ()  # [start, stop) of each embedded passage of ``content``, flat (transforms/embed)
    vectors: bytes = b""  # each passage's vector, float16 row after row (none: embeddings are off)


class Event(NamedTuple):
    """A count or a problem for the crawl report. ``reason`` is set for problems."""

    kind: str  # counter name: discovered, declined, new, changed, unchanged, read, failed, ...
    url: str
    stage: str
    reason: str
    count: int

    route = "events"  # not a field: the output a discovery step sends it to


def event(kind: str, url: str = "", stage: str = "", reason: str = "", count: int = 1) -> Event:
    return Event(kind, url, stage, reason, count)


# -- what a record may carry ----------------------------------------------------------------------
# Names that are not UTF-8 (a file name, a TAR member name, a mail header) reach Python as strings with
# lone surrogates (``surrogateescape``: the byte 0xE9 becomes U+DCE9). No coder, JSON encoder or SQLite
# accepts them, so every record leaving a stage carries them escaped instead: U+DC80–U+DCFF as ``\xNN``
# (the raw byte, as Python's ``backslashreplace`` shows it), any other lone surrogate as ``\uNNNN``.
# Nothing is dropped: the bytes are readable in the escape, and a file's URL keeps them exactly
# (percent-encoded).

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def lossless(text: str) -> str:
    """``text`` with its lone surrogates escaped (see above); any other text unchanged."""
    if text.isascii():
        return text
    try:
        text.encode()  # fails only on a lone surrogate; in C, several times faster than searching for one
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape, text)
    return text


_TYPES = {"str": str, "int": int, "bool": bool, "bytes": bytes, "bytes | None": (bytes, type(None))}


def _check_str(value, where):
    if type(value) is str and value.isascii():  # nearly every value: no surrogate can be in it
        return value
    if not isinstance(value, str):
        raise TypeError(f"{where} is {type(value).__name__}, not str")
    # a subclass of str (a plugin's, lxml's string results) as the plain string it holds, escaped as well: one
    # with a lone surrogate failed the whole batch of documents written with it (UnicodeEncodeError)
    return lossless(value if type(value) is str else str.__str__(value))


#: What an ``int`` field may hold: Beam's RowCoder writes it as a 64-bit integer, and so does SQLite (a larger
#: one, a plugin's ``size``, say, failed the index write of every document in its batch: OverflowError).
INT64 = range(-2**63, 2**63)


def _check_int(value, where):
    if not isinstance(value, int):
        raise TypeError(f"{where} is {type(value).__name__}, not int")
    if value not in INT64:
        raise TypeError(f"{where} is an int of {value.bit_length()} bits, not a 64-bit int")
    return value


def _checker(hint: str):
    """A function (value, where) → the value conformed to ``hint``, or TypeError naming ``where``. Each
    runs for every field of every record a stage hands on: the common case is kept short."""
    if hint == "str":
        return _check_str
    if hint == "int":
        return _check_int
    if hint in _TYPES:
        wanted = _TYPES[hint]

        def check(value, where):
            if not isinstance(value, wanted):
                raise TypeError(f"{where} is {type(value).__name__}, not {hint}")
            return value
        check.wanted = wanted  # :func:`_conformer` tests it inline
        return check
    if hint.startswith("Sequence["):
        inner = _checker(hint[len("Sequence["):-1])

        def check_all(value, where):
            if not value and type(value) in (list, tuple):  # nearly every value of most fields
                return []
            if type(value) not in (list, tuple) and (
                    isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset)):
                raise TypeError(f"{where} is {type(value).__name__}, not a sequence")
            try:
                if inner is _check_str and "".join(value).isascii():  # every item an ASCII string, in C
                    return list(map(str.__str__, value))  # a subclass's as the plain string, as _check_str gives it
                return [inner(v, where) for v in value]
            except TypeError:  # again, item by item, so the message names the item at fault
                return [inner(v, f"{where}[{n}]") for n, v in enumerate(value)]
        check_all.sequence = True  # :func:`_conformer` tests an empty list inline
        return check_all
    kind = RECORDS[hint]

    def check_record(value, where):  # a nested record (RawDocument.entry, IndexDoc.aux's items): named, with its item
        try:
            return conform(kind(*value))
        except TypeError as err:
            raise TypeError(f"{where}: {err}") from None
    return check_record


def conform(record):
    """``record`` (one of this module's classes) checked field by field against its declared types, with
    surrogates escaped: what a stage hands on can always be encoded, and a value of the wrong type (from a
    plugin, say) fails here, in the element's own stage, not in Beam's machinery or in the index."""
    return _CONFORMERS[type(record)](record)


def _conformer(kind):
    """:func:`conform` for one record class as straight-line code, as ``namedtuple`` writes its methods: every
    field of every record a stage hands on passes here, and a call per field was a tenth of a worker's time
    in a full crawl (py-spy, issue 27). The common cases are tested inline: an ASCII string, an empty list."""
    names = [f"f_{name}" for name in kind._fields]  # prefixed: a field may be named like a builtin (``id``)
    scope = {"kind": kind, "new": tuple.__new__, "check_str": _check_str, "check_int": _check_int, "int64": INT64,
             "empty": (list, tuple)}
    lines = [f"def conform_{kind.__name__}(record):", f"    {', '.join(names)}, = record"]
    for name, (where, check) in zip(names, _CHECKERS[kind], strict=True):
        scope[f"check_{name}"] = check
        if check is _check_str:
            lines.append(f"    if type({name}) is not str or not {name}.isascii(): {name} = check_str({name}, {where!r})")
        elif check is _check_int:
            lines.append(f"    if type({name}) is not int or {name} not in int64: check_int({name}, {where!r})")
        elif hasattr(check, "wanted"):
            scope[f"wanted_{name}"] = check.wanted
            lines.append(f"    if not isinstance({name}, wanted_{name}): check_{name}({name}, {where!r})")
        elif getattr(check, "sequence", False):
            lines.append(f"    {name} = check_{name}({name}, {where!r}) if {name} or type({name}) not in empty else []")
        else:
            lines.append(f"    {name} = check_{name}({name}, {where!r})")
    lines.append(f"    return new(kind, ({', '.join(names)},))")
    exec("\n".join(lines), scope)  # noqa: S102 - the source is made here from the classes' own field names
    return scope[f"conform_{kind.__name__}"]


def use_row_coders() -> None:
    """Encode the records with Beam's RowCoder in pipelines built from now on (idempotent)."""
    import apache_beam as beam  # here, not at the top: see the module's docstring

    for record in (FrontierItem, Entry, Listing, SnapshotEntry, RawDocument, AuxValue, IndexDoc, Event):
        beam.coders.registry.register_coder(record, beam.coders.RowCoder)


RECORDS = {r.__name__: r for r in (FrontierItem, Entry, Listing, SnapshotEntry, RawDocument, AuxValue, IndexDoc,
                                    Event)}
_CHECKERS = {r: [(f"{r.__name__}.{name}", _checker(getattr(hint, "__forward_arg__", hint)))
                  for name, hint in r.__annotations__.items()] for r in RECORDS.values()}
_CONFORMERS = {r: _conformer(r) for r in RECORDS.values()}
