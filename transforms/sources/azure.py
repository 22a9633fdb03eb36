"""Azure Blob Storage containers through azure-storage-blob, as smart-open reads them: ``az://container/prefix/blob``
(``abfs://`` / ``abfss://`` spelled the same way, as adlfs spells them: the account from the login), or as Hadoop
and Spark spell them, ``abfss://container@account.dfs.core.windows.net/prefix/blob`` (``abfs://``, ``az://``,
``…blob.core.windows.net`` alike): the account is the host's first label. Such a URL is a document's URL as
written (lower case), so two accounts' containers of one name never share a URL.

Listing, freshness, reading and failures are every object store's
(:mod:`~beamtrawl.transforms.sources.object_store`); this module makes the calls. An object's version is its
ETag (a new upload or a metadata change moves it), its last-modified time the service's; its listing carries
its content type and user metadata, which become fields of its document. On an account with a hierarchical
namespace (Data Lake Gen2) a folder is also a blob marked ``hdi_isfolder``: no document.

The account and its login: a ``credentials:`` entry for the container's URL (username: the account's name,
password: its key, as ``${ENV}``), else the connection string in ``AZURE_STORAGE_CONNECTION_STRING``, else an
Azure AD (Entra ID) token from azure-identity's ``DefaultAzureCredential`` (the environment's service principal,
workload or managed identity, the Azure CLI's login, …) at ``az.account_url`` (or the URL's account's blob
service); ``az.anonymous: true`` sends no login (a public container). An account in the URL must be the
login's. Never a key or SAS in the URL; no reason this module reports names one.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from beamtrawl.transforms.fields import Count, Flag
from beamtrawl.transforms.sources.object_store import (
    EndpointUrl,
    ObjectStore,
    Page,
    Sent,
    Stored,
    StoreSettings,
)
from pydantic import Field

# The SDK logs every request's URL and headers at INFO (a SAS signature in a query): never print them.
for _name in ("azure", "urllib3.connectionpool", "smart_open"):
    logging.getLogger(_name).setLevel(logging.WARNING)

#: The environment variable of the connection string (Azure's tools and SDKs read the same).
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"


class AzureSettings(StoreSettings):
    """Azure Blob Storage containers (az://, abfs://, abfss://); the login: a credentials entry for
    az://container/ (username: the account, password: its key), AZURE_STORAGE_CONNECTION_STRING, else Azure AD
    (DefaultAzureCredential: a managed identity, AZURE_CLIENT_ID/_SECRET/_TENANT_ID, the Azure CLI's login, …)."""

    account_url: EndpointUrl | None = None
    """the blob service's http(s):// address (https://ACCOUNT.blob.core.windows.net; Azurite:
    http://127.0.0.1:10000/devstoreaccount1); not given: the connection string's, or the credentials entry's
    account at blob.core.windows.net"""
    max_attempts: Count = Field(4, ge=1, le=20)
    """tries of one request (throttling and 5xx are retried with backoff); then the prefix is kept as it is"""
    anonymous: Flag = False
    """send no login at account_url: a public container (not given: Azure AD's DefaultAzureCredential chain)"""

    def within(self, seconds: float):
        """One try of each request, none longer than ``seconds``: a searcher waits for no retries."""
        return super().within(seconds).model_copy(update={"max_attempts": 1})


class NoAccount(ValueError):
    """No account to read a container from (neither settings, a credentials entry nor a connection string), or
    the URL's account is not the login's."""


#: ``container@account.dfs.core.windows.net`` (or ``.blob.``, another cloud's suffix): container, account, suffix.
_HOME = re.compile(r"([^@]+)@([^.@]+)\.(?:dfs|blob)\.([^@/:]+)")
_ACCOUNT = (r"[a-z0-9]{3,24}", "an account name is 3-24 lower case letters or digits")


def where(bucket: str) -> tuple[str, str, str]:
    """A URL's authority as (container, account, blob service URL); the account "" when the URL names none."""
    home = _HOME.fullmatch(bucket)
    if home is None:
        return bucket, "", ""
    container, account, suffix = home.groups()
    return container, account, f"https://{account}.blob.{suffix}"


def _connection_account() -> str:
    """The account of the connection string in the environment ("" without one)."""
    found = re.search(r"(?:^|;)\s*AccountName=([^;]*)", os.environ.get(CONNECTION_STRING, ""), re.IGNORECASE)
    return found.group(1).strip() if found else ""


def azure_ad():
    """Azure AD's credential chain (azure-identity's DefaultAzureCredential), as Azure's SDKs and tools log in
    without a key; its interactive browser login left out (a crawl runs unattended)."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential(exclude_interactive_browser_credential=True)


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
              "a container name is 3-63 lower case letters, digits or single '-'")
    user_is_address = True  # abfss://container@account.dfs.core.windows.net/: the container, no login

    STARTER = (
        "az:                              # the login: AZURE_STORAGE_CONNECTION_STRING, or a credentials entry",
        "                                 # for the container (username: the account, password: ${ITS_KEY}),",
        "                                 # else Azure AD (a managed identity, the Azure CLI's login, …)",
        "  # account_url: https://ACCOUNT.blob.core.windows.net   # not given: the connection string's",
        "  max_attempts: 4               # tries of one request; then the prefix keeps its documents")

    @classmethod
    def start_problem(cls, url: str) -> str:
        """A container@account URL: the container's and the account's name rules, and the connection string's
        account (when there is one) must be the URL's."""
        scheme, rest = url.split("://", 1)
        if "@" not in rest.split("/", 1)[0]:
            return super().start_problem(url)
        container, account, service = where(rest.split("/", 1)[0])
        if not service:
            return f"a {scheme}:// start URL with an account is {scheme}://container@account.dfs.core.windows.net/"
        for name, (pattern, rule) in ((container, cls.BUCKET), (account, _ACCOUNT)):
            if not re.fullmatch(pattern, name):
                return f"{name!r}: {rule}"
        if not re.fullmatch(r"[^?#]*", rest):
            return f"a {scheme}:// start URL holds no query (a SAS is a login: put it in no URL)"
        known = _connection_account()
        if known and known != account:
            return f"account {account!r} is not the one of {CONNECTION_STRING} ({known!r})"
        return ""

    def container(self, url: str, bucket: str):
        """azure-storage-blob's client of the container ``bucket`` names (one service client per account and
        login)."""
        name, account, service = where(bucket)
        return self.service(url, account, service).get_container_client(name)

    def service(self, url: str, account: str, service: str):
        return self.client(url, lambda login: self._make(login, account, service), home=account)

    def _make(self, login, account: str = "", service: str = ""):
        from azure.storage.blob import BlobServiceClient, ExponentialRetry

        options = self.options()
        bounds = {"connection_timeout": options.connect_timeout, "read_timeout": options.read_timeout,
                  "retry_policy": ExponentialRetry(retry_total=options.max_attempts - 1)}
        if account and login is not None and login.username != account:
            raise NoAccount(f"the credentials entry's account {login.username!r} is not the URL's {account!r}")
        if account and login is None and _connection_account() not in ("", account):
            raise NoAccount(f"the URL's account {account!r} is not the one of {CONNECTION_STRING}")
        if login is not None:
            url = options.account_url or service or f"https://{login.username}.blob.core.windows.net"
            return BlobServiceClient(url, {"account_name": login.username, "account_key": login.password}, **bounds)
        if os.environ.get(CONNECTION_STRING):
            return BlobServiceClient.from_connection_string(os.environ[CONNECTION_STRING], **bounds)
        if options.account_url or service:
            return BlobServiceClient(options.account_url or service, None if options.anonymous else azure_ad(),
                                     **bounds)
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

        name, account, service = where(bucket)
        return smart_open.azure.open(name, key, "rb", client=self.service(url, account, service))

    def sign(self, url: str, bucket: str, key: str, seconds: int, sent: Sent) -> str:
        """A read-only SAS of the blob signed with the account's key, sent as ``sent``
        says; "" without a key."""
        from azure.storage.blob import BlobSasPermissions, generate_blob_sas

        name, account, home = where(bucket)
        service = self.service(url, account, home)
        account_key = getattr(service.credential, "account_key", None)
        if not account_key:
            return ""
        token = generate_blob_sas(service.account_name, name, key, account_key=account_key,
                                  permission=BlobSasPermissions(read=True), content_disposition=sent.disposition,
                                  content_type=sent.content_type,
                                  expiry=datetime.now(UTC) + timedelta(seconds=seconds))
        return f"{service.get_blob_client(name, key).url}?{token}"

    def failures(self) -> tuple[type, ...]:
        from azure.core.exceptions import AzureError

        return (AzureError, OSError, ValueError)

    def reason(self, err: Exception) -> str:
        """The service's error code and status, the credential of Azure AD's chain that was refused a token (the
        chain's message lists every credential it tried, most of them not set up), or what failed to connect."""
        from azure.core.exceptions import ClientAuthenticationError, HttpResponseError

        if isinstance(err, ClientAuthenticationError) and not err.status_code:  # no Azure AD token
            tried = [line.strip() for line in str(err).splitlines() if line.startswith("\t")]  # one per credential
            failed = [line for line in tried if "error" in line.lower()]  # one that was set up, and was refused
            return f"no Azure AD token: {(failed or tried or str(err).splitlines())[0]}"[:300]
        if isinstance(err, HttpResponseError) and err.status_code:
            code = getattr(err.error_code, "value", err.error_code)  # azure-storage-blob's StorageErrorCode
            return f"{code or type(err).__name__} (HTTP {err.status_code})"
        if isinstance(err, NoAccount):
            return str(err)
        return super().reason(err)
