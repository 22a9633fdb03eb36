"""S3 buckets and S3-compatible stores (``s3://bucket/prefix/key``) through boto3, documents read by smart-open.

Listing, freshness (the listing's size, LastModified and ETag), reading and failures are every object store's
(:mod:`~beamtrawl.transforms.sources.object_store`); this module makes the calls. A listing of S3 carries no
content type or user metadata (a HEAD per object would), so a listed S3 object's document has none as fields
(an object named by a start URL has them, from its HEAD).

Logins come from boto3's standard chain (the environment, ``~/.aws``, an instance role) or a
``credentials:`` entry for the bucket (username: the access key id, password: the secret key); never
from the URL, and no reason this module reports names one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Literal

from beamtrawl.transforms.fields import Count, Text
from beamtrawl.transforms.sources.object_store import (
    EndpointUrl,
    ObjectStore,
    Page,
    Sent,
    Stored,
    StoreSettings,
)
from pydantic import Field

# Their DEBUG traces print request headers, signatures included: never print them (--debug).
for _name in ("botocore", "boto3", "urllib3.connectionpool", "smart_open"):
    logging.getLogger(_name).setLevel(logging.INFO)


def _client_error() -> type:
    """botocore's ClientError, imported when a failure is looked at (botocore costs 0.15 s, which a search that
    only asks this source about a URL never pays)."""
    from botocore.exceptions import ClientError

    return ClientError


class S3Settings(StoreSettings):
    """S3 buckets and S3-compatible stores (MinIO, Ceph, …); logins from boto3's chain (the environment,
    ~/.aws, an instance role) or a credentials entry for s3://bucket/ (username: access key id)."""

    endpoint_url: EndpointUrl | None = None
    """an S3-compatible store's http(s):// endpoint; not given: AWS_ENDPOINT_URL, else AWS itself"""
    region: Text | None = None
    """the region; not given: AWS_REGION / ~/.aws, else us-east-1"""
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    """bucket in the path (most S3-compatible stores) or in the host name (AWS); auto: boto3 decides"""
    max_attempts: Count = Field(4, ge=1, le=20)
    """tries of one request (throttling and 5xx are retried with backoff); then the prefix is kept as it is"""

    def within(self, seconds: float):
        """One try of each request, none longer than ``seconds``: a searcher waits for no retries."""
        return super().within(seconds).model_copy(update={"max_attempts": 1})


class S3Source(ObjectStore):
    """``s3://bucket/[prefix/]`` URLs: a bucket, a prefix (a folder) or one object."""

    schemes = ("s3",)
    Settings = S3Settings
    BUCKET = (r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "a bucket name is 3-63 lower case letters, digits, '.' or '-'")

    STARTER = (
        "s3:                              # the login: boto3's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,",
        "                                 # ~/.aws or an instance role), never this file",
        "  # endpoint_url: http://127.0.0.1:9000   # an S3-compatible store (or AWS_ENDPOINT_URL); not given: AWS",
        "  # region: eu-west-1",
        "  max_attempts: 4               # tries of one request; then the prefix keeps its documents")

    def s3(self, url: str):
        """boto3's S3 client for ``url``'s bucket."""
        return self.client(url, self._make)

    def _make(self, login):
        import boto3  # imported with the first client: see _client_error
        from botocore.config import Config

        options = self.options()
        config = Config(connect_timeout=options.connect_timeout, read_timeout=options.read_timeout,
                        retries={"max_attempts": options.max_attempts, "mode": "standard"},
                        s3={"addressing_style": options.addressing_style})
        return boto3.session.Session().client(
            "s3", endpoint_url=options.endpoint_url, region_name=options.region,
            aws_access_key_id=login.username if login else None,
            aws_secret_access_key=login.password if login else None, config=config)

    def pages(self, url: str, bucket: str, prefix: str) -> Iterator[Page]:
        return self.pages_after(url, bucket, prefix, "", delimited=True)

    def lists_flat(self, bucket: str) -> bool:
        """Not a directory bucket (S3 Express One Zone, named ``…--x-s3``): its listing is not in key order and
        takes no ``StartAfter``, so listed flat it would stop at its first page, every crawl (red team hred7)."""
        return super().lists_flat(bucket) and not bucket.endswith("--x-s3")

    def pages_after(self, url: str, bucket: str, prefix: str, after: str, delimited: bool) -> Iterator[Page]:
        """``list_objects_v2`` from ``StartAfter``."""
        for page in self.s3(url).get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": self.options().page_size},
                **({"Delimiter": "/"} if delimited else {}), **({"StartAfter": after} if after else {})):
            yield Page([Stored(o["Key"], o["Size"], o["LastModified"], o.get("ETag", ""))
                        for o in page.get("Contents", ())], [p["Prefix"] for p in page.get("CommonPrefixes", ())])

    def head(self, url: str, bucket: str, key: str) -> Stored | None:
        try:
            head = self.s3(url).head_object(Bucket=bucket, Key=key)
        except _client_error() as err:
            if err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return None  # no such object: a prefix
            raise
        return Stored(key, head["ContentLength"], head["LastModified"], head.get("ETag", ""),
                      head.get("ContentType", ""), tuple(head.get("Metadata", {}).items()))

    def reader(self, url: str, bucket: str, key: str):
        import smart_open.s3

        return smart_open.s3.open(bucket, key, "rb", client=self.s3(url))

    def sign(self, url: str, bucket: str, key: str, seconds: int, sent: Sent) -> str:
        """A presigned GET (signature version 4, as the client signs), sent as ``sent`` says."""
        from botocore.exceptions import NoCredentialsError

        try:
            return self.s3(url).generate_presigned_url("get_object", ExpiresIn=seconds, Params={
                "Bucket": bucket, "Key": key, "ResponseContentDisposition": sent.disposition,
                "ResponseContentType": sent.content_type})
        except NoCredentialsError:
            return ""

    def failures(self) -> tuple[type, ...]:
        from botocore.exceptions import BotoCoreError

        return (BotoCoreError, _client_error(), OSError, ValueError)

    def reason(self, err: Exception) -> str:
        """The store's error code and status, or what failed to connect."""
        if isinstance(err, _client_error()):
            error = err.response.get("Error", {})
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = error.get("Code") or "error"
            return f"{code} (HTTP {status})" if status else str(code)
        return super().reason(err)
