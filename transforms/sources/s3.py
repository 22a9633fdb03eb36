"""S3 buckets and S3-compatible stores (``s3://bucket/prefix/key``) through boto3, documents read by smart-open.

A prefix is a folder: it is listed with ``Delimiter='/'`` page by page (``list_objects_v2``), its objects
become entries and its common prefixes go on the walk's stack, so a bucket of millions of objects is
spread over workers by prefix like a deep file tree (:func:`~beamtrawl.transforms.sources.walk.walk_to_budget`),
and each prefix listed to its end leaves the listing evidence a delete needs. An object's freshness is
its listing's size, LastModified and ETag: an unchanged object costs nothing beyond the listing. Reading
streams the object through smart-open (ranged GETs), after the read stage has checked the listed size
against ``max_file_size``.

Logins come from boto3's standard chain (the environment, ``~/.aws``, an instance role) or a
``credentials:`` entry for the bucket (username: the access key id, password: the secret key); never
from the URL, and no reason this module reports names one. A bucket that cannot be listed (unreachable
endpoint, bad or expired credential, throttling past the retries, no such bucket) is one ``incomplete``
line, which keeps every document under it.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from beamtrawl.transforms.fields import Count, Items, Seconds, Section, Text, fail
from beamtrawl.transforms.records import Entry, FrontierItem, event
from beamtrawl.transforms.sources.base import StartHints
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.walk import walk_to_budget
from beamtrawl.transforms.urls import depth_below, doc_id, quote_segment
from pydantic import AfterValidator, Field

# Their DEBUG traces print request headers, signatures included: never print them (--debug).
for _name in ("botocore", "boto3", "urllib3.connectionpool", "smart_open"):
    logging.getLogger(_name).setLevel(logging.INFO)


def _client_error() -> type:
    """botocore's ClientError, imported when a failure is looked at (botocore costs 0.15 s, which a search that
    only asks this source about a URL never pays)."""
    from botocore.exceptions import ClientError

    return ClientError


def _failures() -> tuple:
    """What one request may raise: unreachable, refused, throttled, a bad answer."""
    from botocore.exceptions import BotoCoreError

    return (BotoCoreError, _client_error(), OSError, ValueError)

_MAKE = threading.Lock()  # boto3's default session is not safe to build clients from in parallel


def bucket_and_key(url: str) -> tuple[str, str]:
    """``s3://bucket/a%20b/c.txt`` → ``("bucket", "a b/c.txt")``; a prefix keeps its trailing slash."""
    parts = urlsplit(url)
    return parts.netloc, unquote(parts.path[1:])


def object_url(bucket: str, key: str) -> str:
    """The URL of object ``key`` (each segment percent-escaped as a file name is)."""
    return f"s3://{bucket}/" + "/".join(quote_segment(segment.encode("utf-8")) for segment in key.split("/"))


def reason(err: Exception) -> str:
    """A one-line reason without secrets: the store's error code and status, or what failed to connect."""
    if isinstance(err, _client_error()):
        error = err.response.get("Error", {})
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = error.get("Code") or "error"
        return f"{code} (HTTP {status})" if status else str(code)
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _mtime_ns(when: datetime) -> int:
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def _odd(key: str) -> bool:
    """A key no URL can name faithfully: an empty or dot segment (``a//b``, ``a/./b``) is folded away when
    URLs are normalised, so it would be read as another object."""
    return any(segment in ("", ".", "..") for segment in key.rstrip("/").split("/"))


def _http_url(url: str) -> str:
    if not re.match(r"https?://[^/\s]+", url) or "@" in url.split("://", 1)[1].split("/", 1)[0]:
        raise fail(f"must be an http:// or https:// URL without a login in it, got {url!r}")
    return url.rstrip("/")


class S3Settings(Section):
    """S3 buckets and S3-compatible stores (MinIO, Ceph, …); logins from boto3's chain (the environment,
    ~/.aws, an instance role) or a credentials entry for s3://bucket/ (username: access key id)."""

    endpoint_url: Annotated[Text, AfterValidator(_http_url)] | None = None
    """an S3-compatible store's http(s):// endpoint; not given: AWS_ENDPOINT_URL, else AWS itself"""
    region: Text | None = None
    """the region; not given: AWS_REGION / ~/.aws, else us-east-1"""
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    """bucket in the path (most S3-compatible stores) or in the host name (AWS); auto: boto3 decides"""
    connect_timeout: Seconds = 10.0
    """seconds to connect"""
    read_timeout: Seconds = 60.0
    """seconds between two reads"""
    max_attempts: Count = Field(4, ge=1, le=20)
    """tries of one request (throttling and 5xx are retried with backoff); then the prefix is kept as it is"""
    groups: Annotated[tuple[Text, ...], Items] = ()
    """the access-control groups of every object (none: public; access_control entries may decide instead)"""


class S3Source:
    """``s3://bucket/[prefix/]`` URLs: a bucket, a prefix (a folder) or one object."""

    schemes = ("s3",)
    Settings = S3Settings

    @staticmethod
    def start_hints(url: str) -> StartHints:
        """An object's key is indexed itself; a bucket or a prefix ending in / is listed."""
        return StartHints(index=not url.endswith("/"), lines=(
            "s3:                              # the login: boto3's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,",
            "                                 # ~/.aws or an instance role), never this file",
            "  # endpoint_url: http://127.0.0.1:9000   # an S3-compatible store (or AWS_ENDPOINT_URL); not given: AWS",
            "  # region: eu-west-1",
            "  max_attempts: 4               # tries of one request; then the prefix keeps its documents"))

    @staticmethod
    def start_problem(url: str) -> str:
        if not re.fullmatch(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^?#]*", url):
            return ("an s3:// start URL is s3://bucket/[prefix/] (a bucket name is 3-63 lower case letters, "
                    "digits, '.' or '-')")
        return ""

    def __init__(self, settings: SourceSettings | None = None):
        self.settings = settings or SourceSettings()
        self._clients: dict = {}

    # -- the client ---------------------------------------------------------------------------------
    def client(self, url: str):
        """boto3's S3 client for ``url``'s bucket, made on first use and kept (one per login)."""
        login = self.settings.login_for(url)
        keys = (login.username, login.password) if login else (None, None)
        if keys not in self._clients:
            import boto3  # imported with the first client: see _client_error
            from botocore.config import Config

            options = self.settings.of(S3Source)
            config = Config(connect_timeout=options.connect_timeout, read_timeout=options.read_timeout,
                            retries={"max_attempts": options.max_attempts, "mode": "standard"},
                            s3={"addressing_style": options.addressing_style})
            with _MAKE:
                self._clients[keys] = boto3.session.Session().client(
                    "s3", endpoint_url=options.endpoint_url, region_name=options.region,
                    aws_access_key_id=keys[0], aws_secret_access_key=keys[1], config=config)
        return self._clients[keys]

    # -- discovery ----------------------------------------------------------------------------------
    def _entry(self, url: str, item: FrontierItem, size: int, modified: datetime, etag: str) -> Entry:
        return Entry(id=doc_id(url), url=url, root=item.root, depth=depth_below(url, item.root), size=size,
                     mtime_ns=_mtime_ns(modified), identity="", content=None, mimetype="", outlinks=[],
                     etag=etag.strip('"'), http_last_modified="", source_url=item.url, link_text="",
                     groups=list(self.settings.of(S3Source).groups))

    def _list(self, folder: FrontierItem, rules, stack: list):
        """List one prefix, page by page: objects become entries, common prefixes go on ``stack``."""
        bucket, prefix = bucket_and_key(folder.url)
        prefix = prefix.rstrip("/") + "/" if prefix.strip("/") else ""
        listed = 0
        try:
            pages = self.client(folder.url).get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix, Delimiter="/")
            for page in pages:
                objects, prefixes = page.get("Contents", ()), page.get("CommonPrefixes", ())
                listed += len(objects) + len(prefixes)
                yield event("listed", count=len(objects) + len(prefixes))
                for found in objects:
                    yield from self._object(found, bucket, prefix, folder, rules)
                for common in prefixes:
                    yield from self._prefix(common["Prefix"], bucket, folder, rules, stack)
        except _failures() as err:  # unreachable, refused, throttled: its documents stay in the index
            yield event("incomplete", folder.url, "discover", f"cannot list s3://{bucket}/{prefix}: {reason(err)}")
        return listed

    def _object(self, found: dict, bucket: str, prefix: str, folder: FrontierItem, rules) -> Iterator:
        key = found["Key"]
        if key == prefix or key.endswith("/"):  # a folder marker written by consoles: no document
            return
        url = object_url(bucket, key)
        if _odd(key):
            yield event("skipped", url, "discover", "a key with an empty or dot segment cannot be a URL")
            return
        decision = rules.decide(url, depth_below(url, folder.root), source_url=folder.url)
        if not decision.accepted or not decision.index:
            yield event("declined", url, "discover", "")
            return
        yield self._entry(url, folder, found["Size"], found["LastModified"], found.get("ETag", ""))

    def _prefix(self, common: str, bucket: str, folder: FrontierItem, rules, stack: list) -> Iterator:
        url = object_url(bucket, common.rstrip("/"))
        if _odd(common):
            yield event("skipped", url, "discover", "a prefix with an empty or dot segment cannot be a URL")
            return
        depth = depth_below(url, folder.root)
        decision = rules.decide(url, depth + 1, source_url=folder.url)  # walked only if its objects could be
        if not decision.accepted or not decision.parse:
            yield event("declined", url, "discover", "")
            return
        stack.append(FrontierItem(url, folder.root, depth, url, [], folder.url, ""))

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """Yield Entry records for objects, FrontierItem records for prefixes left to the next round and
        Event records for counts and problems (``follow_symlinks`` does not apply to a store)."""
        bucket, key = bucket_and_key(item.url)
        start = rules.start(item.url)
        if key and not key.endswith("/") and start is not None:  # a start URL may name one object
            try:
                head = self.client(item.url).head_object(Bucket=bucket, Key=key)
            except _client_error() as err:
                if err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 404:
                    yield event("incomplete", item.url, "discover", f"unavailable: {reason(err)}")
                    return
                head = None  # no such object: a prefix
            except _failures() as err:
                yield event("incomplete", item.url, "discover", f"unavailable: {reason(err)}")
                return
            if head is not None:
                if start.index:
                    yield self._entry(item.url, item, head["ContentLength"], head["LastModified"],
                                      head.get("ETag", ""))
                return
        if start is not None and not start.parse:
            yield event("declined", item.url, "discover", "")
            return
        yield from walk_to_budget([item], budget, lambda folder, stack: self._list(folder, rules, stack))

    # -- reading ------------------------------------------------------------------------------------
    def open_document(self, url: str) -> io.BufferedReader:
        """The object's bytes, streamed by smart-open in ranged GETs as the reader asks for them."""
        bucket, key = bucket_and_key(url)
        try:
            import smart_open.s3

            raw = smart_open.s3.open(bucket, key, "rb", client=self.client(url))
        except _failures() as err:
            raise OSError(f"cannot open: {reason(err)}") from None
        return io.BufferedReader(_Stream(raw), buffer_size=1024 * 1024)


class _Stream(io.RawIOBase):
    """smart-open's reader whose failures (the store's, the connection's) are OSErrors for the read stage."""

    def __init__(self, reader):
        self.reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.reader.read(len(buffer))
        except _failures() as err:
            raise OSError(f"S3 read failed: {reason(err)}") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self.reader.close()
        except _failures():
            pass
        super().close()
