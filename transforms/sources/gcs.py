"""Google Cloud Storage buckets (``gs://bucket/prefix/key``) through google-cloud-storage, as smart-open reads them.

Listing, freshness, reading and failures are every object store's
(:mod:`~beamtrawl.transforms.sources.object_store`); this module makes the calls. An object's version is its
generation and metageneration (a new upload or a metadata change moves one of them), its last-modified time
``updated``; its listing carries its content type and user metadata, which become fields of its document.

Logins come from Google's standard chain (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth
application-default login``, a VM's service account); with ``STORAGE_EMULATOR_HOST`` set (fake-gcs-server) or
``anonymous: true`` the client sends none. A ``credentials:`` entry does not apply to ``gs://``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import timedelta

from beamtrawl.transforms.fields import Flag, Seconds, Text
from beamtrawl.transforms.sources.object_store import (
    EndpointUrl,
    ObjectStore,
    Page,
    Sent,
    Stored,
    StoreSettings,
)

# Their DEBUG traces print request headers (a bearer token): never print them (--debug).
for _name in ("google", "google.auth", "google.cloud", "urllib3.connectionpool", "smart_open"):
    logging.getLogger(_name).setLevel(logging.INFO)


#: Bytes one ranged read asks for (google-cloud-storage's default, 40 MiB, would fetch that much of an object
#: whose size is over max_file_size to sniff its type from its first bytes); a multiple of 256 KiB.
READ_CHUNK = 4 * 1024 * 1024


class GcsSettings(StoreSettings):
    """Google Cloud Storage buckets; logins from Google's chain (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
    application-default login, a VM's service account)."""

    endpoint_url: EndpointUrl | None = None
    """another endpoint's http(s):// address; not given: STORAGE_EMULATOR_HOST (an emulator), else Google"""
    project: Text | None = None
    """the project billed for requests; not given: the login's own"""
    anonymous: Flag = False
    """send no login: public buckets (a client at STORAGE_EMULATOR_HOST sends none anyway)"""
    retry_seconds: Seconds = 60.0
    """how long one request is retried on throttling, 5xx and lost connections; then the prefix keeps its
    documents"""

    def within(self, seconds: float):
        """Requests retried for ``seconds`` at most, none longer: what a searcher waits."""
        return super().within(seconds).model_copy(update={"retry_seconds": min(self.retry_seconds, seconds)})


def _blob(blob) -> Stored:
    return Stored(blob.name, int(blob.size or 0), blob.updated or blob.time_created,
                  f"{blob.generation}:{blob.metageneration}", blob.content_type or "",
                  tuple((blob.metadata or {}).items()))


class GcsSource(ObjectStore):
    """``gs://bucket/[prefix/]`` URLs: a bucket, a prefix (a folder) or one object."""

    schemes = ("gs",)
    Settings = GcsSettings
    BUCKET = (r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]",
              "a bucket name is 3-63 lower case letters, digits, '.', '_' or '-'")

    STARTER = (
        "gs:                              # the login: Google's chain (GOOGLE_APPLICATION_CREDENTIALS, gcloud's",
        "                                 # application-default login or a VM's service account), never this file",
        "  # project: my-project          # the project billed; not given: the login's",
        "  # anonymous: true              # a public bucket: no login",
        "  retry_seconds: 60              # retries of one request; then the prefix keeps its documents")

    def gcs(self, url: str):
        """google-cloud-storage's client (one for every bucket: a credentials entry does not apply)."""
        return self.client("gs://", self._make)

    def _make(self, login):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        options = self.options()
        return storage.Client(project=options.project,
                              credentials=AnonymousCredentials() if options.anonymous else None,
                              client_options={"api_endpoint": options.endpoint_url} if options.endpoint_url else None)

    def _call(self) -> dict:
        """The bounds of one request: its timeouts, and its retries on throttling, 5xx and lost connections."""
        from google.cloud.storage.retry import DEFAULT_RETRY

        options = self.options()
        return {"timeout": (options.connect_timeout, options.read_timeout),
                "retry": DEFAULT_RETRY.with_timeout(options.retry_seconds)}

    def pages(self, url: str, bucket: str, prefix: str) -> Iterator[Page]:
        return self.pages_after(url, bucket, prefix, "", delimited=True)

    def pages_after(self, url: str, bucket: str, prefix: str, after: str, delimited: bool) -> Iterator[Page]:
        """``objects.list`` from ``startOffset`` (which names the first key it may list: ``after`` itself is
        left out)."""
        listing = self.gcs(url).list_blobs(bucket, prefix=prefix or None, delimiter="/" if delimited else None,
                                           start_offset=after or None, page_size=self.options().page_size,
                                           **self._call())
        for page in listing.pages:
            objects = [_blob(blob) for blob in page if blob.name != after]
            yield Page(objects, [p for p in page.prefixes if p != after])

    def head(self, url: str, bucket: str, key: str) -> Stored | None:
        blob = self.gcs(url).bucket(bucket).get_blob(key, **self._call())
        return _blob(blob) if blob is not None else None

    def reader(self, url: str, bucket: str, key: str):
        import smart_open.gcs

        return smart_open.gcs.open(bucket, key, "rb", client=self.gcs(url), get_blob_kwargs=self._call(),
                                   blob_open_kwargs={"chunk_size": READ_CHUNK})

    def sign(self, url: str, bucket: str, key: str, seconds: int, sent: Sent) -> str:
        """A V4 signed GET, sent as ``sent`` says; "" when the login holds no key to sign
        with (a user's application-default login, an anonymous one)."""
        from google.auth.credentials import Signing

        client = self.gcs(url)
        if not isinstance(client._credentials, Signing):  # the client's login (it has no public name)
            return ""
        endpoint = self.options().endpoint_url or os.environ.get("STORAGE_EMULATOR_HOST") or None
        return client.bucket(bucket).blob(key).generate_signed_url(
            version="v4", expiration=timedelta(seconds=seconds), method="GET", response_disposition=sent.disposition,
            response_type=sent.content_type,
            **({"api_access_endpoint": endpoint} if endpoint else {}))

    def failures(self) -> tuple[type, ...]:
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError

        return (GoogleAPIError, GoogleAuthError, OSError, ValueError)

    def reason(self, err: Exception) -> str:
        """The store's status, what the retries last met, or what failed to connect."""
        from google.api_core.exceptions import GoogleAPICallError, RetryError

        if isinstance(err, GoogleAPICallError) and err.code:
            return f"{type(err).__name__} (HTTP {int(err.code)})"
        if isinstance(err, RetryError) and err.cause is not None:
            return f"retried for {self.options().retry_seconds:g} s: {self.reason(err.cause)}"
        return super().reason(err)
