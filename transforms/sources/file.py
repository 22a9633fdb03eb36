"""Local file trees (``file://``): list folders to a budget, stat files, open them for reading.

A folder step walks depth-first until it has listed ``budget`` entries, then hands the folders it
did not reach to the next discovery round, so a deep or wide tree is spread over workers without a
pipeline stage per level. Folders are identified by (device, inode); with ``follow_symlinks`` a
folder that is its own ancestor is a loop and is not entered.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import unquote_to_bytes, urlsplit

from beamtrawl.transforms.compare import InPlace, Unchanged
from beamtrawl.transforms.records import Entry, FrontierItem, event
from beamtrawl.transforms.sources.base import NotIndexed, StartHints
from beamtrawl.transforms.sources.walk import walk_to_budget
from beamtrawl.transforms.urls import SEGMENT_SAFE, depth_below, doc_id, quote_segment

if TYPE_CHECKING:  # what the index stored of a document: its URL, size and modification time
    from beamtrawl.transforms.index.base import Stored


def path_to_url(path: str | bytes) -> str:
    """``file://`` URL of an absolute local path; bytes that are not UTF-8 survive as %XX escapes."""
    return "file://" + quote_segment(os.fsencode(os.path.abspath(path)))


_PLAIN = re.compile(f"file:///[{re.escape(SEGMENT_SAFE.decode('ascii'))}]*")  # a local path's URL with no escape


def url_to_path(url: str) -> str:
    """Local path of a ``file://`` URL, the exact inverse of :func:`path_to_url`. A URL of a local path holding
    no escape (most: each document read opens one) is that path after ``file://``: ``urlsplit`` and unquoting
    would give the same in ten times the time (4 us: ``urlsplit``'s cache misses), 3 % of a worker's in a full crawl
    (issue 27)."""
    if _PLAIN.fullmatch(url):
        return url[7:]
    parts = urlsplit(url)
    if parts.scheme != "file":
        raise ValueError(f"not a file URL: {url}")
    return os.fsdecode(unquote_to_bytes(parts.path))


def _reason(err: OSError) -> str:
    return err.strerror or errno.errorcode.get(err.errno, str(err))


def _entry(url: str, st: os.stat_result, identity: str, item: FrontierItem,
           place: tuple[int, str] | None = None) -> Entry:
    """``item``: the folder listed, or the start file itself; ``place``: the depth below its root and the id, if
    the caller knows them already (a listing computes the depth once per folder).
    The fields by position, in Entry's order: keywords cost 1.1 us more per file listed."""
    depth, doc = place or (depth_below(url, item.root), doc_id(url))
    return Entry(doc, url, item.root, depth,  # id, url, root, depth
                 st.st_size, st.st_mtime_ns, identity, None, "", [],  # size, mtime_ns, identity, content, mimetype, outlinks
                 "", "", item.url, "")  # etag, http_last_modified, source_url, link_text


def _identity(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def _list(folder: FrontierItem, rules, follow_symlinks: bool, stack: list, in_place: InPlace | None = None):
    """List one folder: files become entries, sub-folders go on ``stack``; returns entries listed. With ``in_place``
    (compare.py) a file whose stat matches its indexed document's becomes no entry: the folder's ``Unchanged`` holds it."""
    base = os.fsencode(url_to_path(folder.url))
    try:
        with os.scandir(base) as listing:
            children = list(listing)
    except OSError as err:  # unreadable or vanished: its documents stay in the index
        yield event("incomplete", folder.url, "discover", f"cannot list folder: {_reason(err)}")
        return 0
    prefix = folder.url.rstrip("/") + "/"
    depth = depth_below(prefix + "_", folder.root)  # a name holds no "/": every child is this deep
    lineage = (*folder.ancestors, folder.identity) if follow_symlinks else ()
    yield event("listed", count=len(children))

    def make(url: str, st: os.stat_result, doc: str | None = None) -> Entry:
        return _entry(url, st, _identity(st) if follow_symlinks else "", folder, (depth, doc or doc_id(url)))

    known = in_place.known(prefix[:-1], make("", _NO_STAT)) if in_place is not None else None
    urls, stats = [], []  # found unchanged (known): no entry made
    here = rules.children(folder.url)
    try:
        for child in children:
            url = prefix + quote_segment(child.name)
            st = _status(child, url, follow_symlinks)
            if not isinstance(st, os.stat_result):
                yield st
                continue
            if stat.S_ISDIR(st.st_mode):
                decision = here.decide(url, depth + 1)  # walked only if its files could be
                if not decision.accepted or not decision.parse:
                    yield event("declined", url, "discover", "")
                    continue
                identity = _identity(st)
                if identity in lineage:
                    yield event("skipped", url, "discover", "symbolic link loop")
                    continue
                stack.append(FrontierItem(url, folder.root, depth, identity, list(lineage), folder.url, ""))
            elif stat.S_ISREG(st.st_mode):
                decision = here.decide(url, depth)
                if not decision.accepted or not decision.index:
                    yield event("declined", url, "discover", "")
                    continue
                doc = doc_id(url)
                if known is not None and known.found(doc, st.st_size, st.st_mtime_ns):
                    urls.append(url)
                    stats.append(st)
                    continue
                yield make(url, st, doc)
            else:
                yield event("declined", url, "discover", "")
    except Exception:  # what it found unchanged goes on, as entries then (a listing that fails keeps what it listed)
        if known is not None:
            yield Unchanged(prefix[:-1], known, make, urls, stats)
        raise
    finally:
        here.flush()
    if known is not None:
        yield Unchanged(prefix[:-1], known, make, urls, stats)
    return len(children)


def _status(child: os.DirEntry, url: str, follow_symlinks: bool):
    """The child's status, or the event saying why it has none."""
    try:
        if child.is_symlink() and not follow_symlinks:  # dangling or not: it is not followed
            return event("symlink_skipped")
        return child.stat(follow_symlinks=True)
    except OSError as err:
        return _unlisted(child, url, err)


_NO_STAT = os.stat_result((0,) * 10)  # a template entry's (compare.Known): any size and time


def _unlisted(child: os.DirEntry, url: str, err: OSError):
    """A followed symbolic link to nothing (or to itself) is a dead link, like a web link answering 404:
    a report line, not a document that failed (packages ship such links; they must not withhold deletes). A file
    whose status cannot be read is there all the same: its subtree is incomplete, so its document is not deleted."""
    if err.errno in (errno.ENOENT, errno.ELOOP) and child.is_symlink():
        return event("dead_link", url, "discover", "broken symbolic link")
    if isinstance(err, FileNotFoundError):
        return event("failed", url, "discover", "vanished while listing")
    return event("incomplete", url, "discover", f"{_reason(err)}; its document is kept")


class FileSource:
    """``file://`` URLs: a start URL names a folder or a single file."""

    schemes = ("file",)

    def __init__(self, settings=None):
        self.settings = settings

    @staticmethod
    def local_path(url: str) -> str:
        return url_to_path(url)

    @staticmethod
    def path_url(path: str | bytes) -> str:
        """The URL of a plain path (the registry's LOCAL scheme: a path in the configuration is a file)."""
        return path_to_url(path)

    @staticmethod
    def deliver(stored, follow_symlinks: bool) -> BinaryIO:
        """The indexed file for a searcher, only if it is still the file that was indexed (:func:`open_local_file`)."""
        return open_local_file(stored, follow_symlinks)

    @staticmethod
    def start_hints(url: str) -> StartHints:
        """A single file is indexed itself; a folder is listed."""
        return StartHints(index=os.path.isfile(url_to_path(url)), lines=(
            "# follow_symlinks: true        # follow symbolic links (each target indexed once); off: skipped, counted",))

    compares_listed = True  # expand() takes in_place (transforms/compare.py)

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None,
               in_place: InPlace | None = None) -> Iterator:
        """Yield Entry records for files, FrontierItem records for folders left to the next round and
        Event records for counts and problems; with ``in_place``, a folder's files found unchanged in one
        :class:`~beamtrawl.transforms.compare.Unchanged` record instead of entries."""
        path = url_to_path(item.url)
        try:
            st = os.stat(path)
        except OSError as err:  # a start URL or folder that is not there: keep everything under it
            yield event("incomplete", item.url, "discover", f"unavailable: {_reason(err)}")
            return
        start = rules.start(item.url)
        if stat.S_ISREG(st.st_mode):  # a start URL naming a single file
            if start is not None and start.index:
                yield _entry(item.url, st, _identity(st) if follow_symlinks else "", item)
            return
        if start is not None and not start.parse:
            yield event("declined", item.url, "discover", "")
            return

        yield from walk_to_budget([item._replace(identity=_identity(st))], budget,
                                  lambda folder, stack: _list(folder, rules, follow_symlinks, stack, in_place))

    def open_document(self, url: str) -> BinaryIO:
        """A binary stream of the document's bytes (a plain file: smart_open's dispatch cost 3 % of a crawl)."""
        return open(url_to_path(url), "rb")


def open_local_file(stored: Stored, follow_symlinks: bool) -> BinaryIO:
    """The indexed local file, or NotIndexed. A file is served only if it is still a regular file of the
    indexed size and modification time, reached without a symbolic link anywhere on its path — from ``/``,
    through the start folder, to the file — unless the crawl followed them: each folder is opened relative
    to the one above it (openat with O_NOFOLLOW), so a start folder or any folder swapped for a link, before
    or during the walk, is refused. Opened non-blocking, so a FIFO put in its place cannot hold a thread."""
    path = url_to_path(stored.url)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if follow_symlinks:  # the crawl followed links: so may delivery, the checks on the file still hold
        return _checked(os.open(path, flags), stored)
    parts = [part for part in os.path.normpath(os.path.abspath(path)).split(os.sep) if part]
    folder = os.open(os.sep, flags | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            inner = _open(name, flags | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = _open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)
    return _checked(fd, stored)


def _open(name: str, flags: int, dir_fd: int) -> int:
    """os.open relative to ``dir_fd``, with a symbolic link in the way (O_NOFOLLOW's ELOOP, or ENOTDIR for a
    folder replaced by a link or a file) as NotIndexed."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotIndexed("a symbolic link is in its place") from None
        raise


def _checked(fd: int, stored: Stored) -> BinaryIO:
    """The open ``fd`` as a blocking stream if it is the indexed regular file, else NotIndexed."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotIndexed("it is no longer a regular file")
        if (st.st_size, st.st_mtime_ns) != (stored.size, stored.mtime_ns):
            raise NotIndexed("it changed after it was indexed")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
