"""Azure Blob Storage containers (``az://container/prefix/blob``, or ``abfs://`` / ``abfss://`` spelled the same
way, as adlfs spells them) through azure-storage-blob, as smart-open reads them.

Listing, freshness, reading and failures are every object store's
(:mod:`~beamtrawl.transforms.sources.object_store`); this module makes the calls. An object's version is its
ETag (a new upload or a metadata change moves it), its last-modified time the service's; its listing carries
its content type and user metadata, which become fields of its document. On an account with a hierarchical
namespace (Data Lake Gen2) a folder is also a blob marked ``hdi_isfolder``: no document.

The account and its login: a ``credentials:`` entry for ``az://container/`` (username: the account's name,
password: its key, as ``${ENV}``), else the connection string in ``AZURE_STORAGE_CONNECTION_STRING``, else no
login (a public container) at ``az.account_url``. Never in the URL; no reason this module reports names one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from beamtrawl.transforms.fields import Count
from beamtrawl.transforms.sources.object_store import EndpointUrl, ObjectStore, Page, Stored, StoreSettings
from pydantic import Field

# The SDK logs every request's URL and headers at INFO (a SAS signature in a query): never print them.
for _name in ("azure", "urllib3.connectionpool", "smart_open"):
    logging.getLogger(_name).setLevel(logging.WARNING)

#: The environment variable of the connection string (Azure's tools and SDKs read the same).
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"


class AzureSettings(StoreSettings):
    """Azure Blob Storage containers (az://, abfs://, abfss://); the login: a credentials entry for
    az://container/ (username: the account, password: its key) or AZURE_STORAGE_CONNECTION_STRING."""

    account_url: EndpointUrl | None = None
    """the blob service's http(s):// address (https://ACCOUNT.blob.core.windows.net; Azurite:
    http://127.0.0.1:10000/devstoreaccount1); not given: the connection string's, or the credentials entry's
    account at blob.core.windows.net"""
    max_attempts: Count = Field(4, ge=1, le=20)
    """tries of one request (throttling and 5xx are retried with backoff); then the prefix is kept as it is"""


class NoAccount(ValueError):
    """No account to read a container from: neither settings, a credentials entry nor a connection string."""


def _blob(blob) -> Stored:
    return Stored(blob.name, int(blob.size or 0), blob.last_modified, blob.etag or "",
                  blob.content_settings.content_type or "" if blob.content_settings else "",
                  tuple((blob.metadata or {}).items()))


def _folder(blob) -> bool:
    """A hierarchical namespace's folder, a blob of its own."""
    return str((blob.metadata or {}).get("hdi_isfolder", "")).lower() == "true"


class AzureSource(ObjectStore):
    """``az://container/[prefix/]`` URLs (``abfs://``, ``abfss://`` alike): a container, a prefix or one blob."""

    schemes = ("az", "abfs", "abfss")
    Settings = AzureSettings
    BUCKET = (r"[a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9]",
              "a container name is 3-63 lower case letters, digits or single '-'; the account is not in the URL")

    STARTER = (
        "az:                              # the login: AZURE_STORAGE_CONNECTION_STRING, or a credentials entry",
        "                                 # for the container (username: the account, password: ${ITS_KEY})",
        "  # account_url: https://ACCOUNT.blob.core.windows.net   # not given: the connection string's",
        "  max_attempts: 4               # tries of one request; then the prefix keeps its documents")

    def container(self, url: str, name: str):
        """azure-storage-blob's client of container ``name`` (one service client per login)."""
        return self.client(url, self._make).get_container_client(name)

    def _make(self, login):
        from azure.storage.blob import BlobServiceClient, ExponentialRetry

        options = self.options()
        bounds = {"connection_timeout": options.connect_timeout, "read_timeout": options.read_timeout,
                  "retry_policy": ExponentialRetry(retry_total=options.max_attempts - 1)}
        if login is not None:
            url = options.account_url or f"https://{login.username}.blob.core.windows.net"
            return BlobServiceClient(url, {"account_name": login.username, "account_key": login.password}, **bounds)
        if os.environ.get(CONNECTION_STRING):
            return BlobServiceClient.from_connection_string(os.environ[CONNECTION_STRING], **bounds)
        if options.account_url:
            return BlobServiceClient(options.account_url, **bounds)
        raise NoAccount(f"no account: set az.account_url, {CONNECTION_STRING} or a credentials entry")

    def pages(self, url: str, bucket: str, prefix: str) -> Iterator[Page]:
        listing = self.container(url, bucket).walk_blobs(name_starts_with=prefix or None, delimiter="/",
                                                         include=["metadata"],
                                                         results_per_page=self.options().page_size)
        for page in listing.by_page():
            objects, prefixes = [], []
            for found in page:
                if not hasattr(found, "size"):  # a BlobPrefix
                    prefixes.append(found.name)
                elif not _folder(found):
                    objects.append(_blob(found))
            yield Page(objects, prefixes)

    def head(self, url: str, bucket: str, key: str) -> Stored | None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            blob = self.container(url, bucket).get_blob_client(key).get_blob_properties()
        except ResourceNotFoundError:
            return None  # no such blob: a prefix
        return None if _folder(blob) else _blob(blob)

    def reader(self, url: str, bucket: str, key: str):
        import smart_open.azure

        return smart_open.azure.open(bucket, key, "rb", client=self.client(url, self._make))

    def sign(self, url: str, bucket: str, key: str, seconds: int, disposition: str, content_type: str) -> str:
        """A read-only SAS of the blob signed with the account's key, sent with ``disposition`` and
        ``content_type``; "" without a key."""
        from azure.storage.blob import BlobSasPermissions, generate_blob_sas

        service = self.client(url, self._make)
        account_key = getattr(service.credential, "account_key", None)
        if not account_key:
            return ""
        token = generate_blob_sas(service.account_name, bucket, key, account_key=account_key,
                                  permission=BlobSasPermissions(read=True), content_disposition=disposition,
                                  content_type=content_type,
                                  expiry=datetime.now(UTC) + timedelta(seconds=seconds))
        return f"{service.get_blob_client(bucket, key).url}?{token}"

    def failures(self) -> tuple[type, ...]:
        from azure.core.exceptions import AzureError

        return (AzureError, OSError, ValueError)

    def reason(self, err: Exception) -> str:
        """The service's error code and status, or what failed to connect."""
        from azure.core.exceptions import HttpResponseError

        if isinstance(err, HttpResponseError) and err.status_code:
            code = getattr(err.error_code, "value", err.error_code)  # azure-storage-blob's StorageErrorCode
            return f"{code or type(err).__name__} (HTTP {err.status_code})"
        if isinstance(err, NoAccount):
            return str(err)
        return super().reason(err)
