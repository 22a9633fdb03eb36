"""Where a Delta table's files are: the options delta-rs's object stores get and the pyarrow file system the
workers stage and read Parquet files with, both made here from the same two places, so the log and the files
can never be looked for in two different stores.

Those places: the table's ``storage_options`` (delta-rs's own keys, any case: ``AWS_ENDPOINT_URL``,
``azure_storage_account_key``, …), else the environment the sources' clients read (``AWS_*`` and ``~/.aws``
for ``s3://``, ``AZURE_STORAGE_CONNECTION_STRING`` for ``az://`` and ``abfss://`` (without a key or SAS: Azure AD,
DefaultAzureCredential for the workers and delta-rs's own chain, given the managed-identity endpoint
``IDENTITY_ENDPOINT`` azure-identity reads), Google's chain for ``gs://``,
or the emulator ``STORAGE_EMULATOR_HOST`` names, as google-cloud-storage and the gs:// source reach it).
An endpoint over plain ``http://`` (an S3-compatible store, Azurite) is allowed as such. A secret is never in
the URL, and an error about the store is reported without any query (a SAS signature may be there).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # imported where a file system is made: the work folder's check needs no pyarrow (0.1-0.2 CPU-s)
    import pyarrow.fs as pafs

#: The environment variable of an Azure connection string (the az:// source reads the same).
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"
#: The managed-identity endpoint of App Service, Container Apps, Functions (and its header's secret, IDENTITY_HEADER):
#: azure-identity reads it; delta-rs is handed it as its ``msi_endpoint``.
IDENTITY_ENDPOINT = "IDENTITY_ENDPOINT"
#: delta-rs's own Azure logins besides a key or SAS (its chain: a service principal, workload identity, the CLI).
_AZURE_LOGINS = ("azure_client_id", "client_id", "azure_client_secret", "client_secret", "azure_storage_token",
                 "bearer_token", "token", "azure_federated_token_file", "use_azure_cli", "azure_use_azure_cli",
                 "azure_msi_endpoint", "msi_endpoint", "azure_identity_endpoint", "identity_endpoint")
#: google-cloud-storage's variable naming a GCS emulator (the gs:// source reads the same).
GCS_EMULATOR = "STORAGE_EMULATOR_HOST"
#: The schemes of a place in Azure Blob Storage (delta-rs reads ``azure://`` too).
AZURE_SCHEMES = ("az", "abfs", "abfss", "azure")


def scheme(uri: str) -> str:
    return uri.split("://", 1)[0].lower() if "://" in uri else "file"


def _given(options: dict, *names: str) -> str:
    """The first of ``names`` (lower case) among ``options``, whatever case the user gave it in."""
    lowered = {key.lower(): value for key, value in options.items()}
    return next((lowered[name] for name in names if lowered.get(name)), "")


def _connection() -> dict[str, str]:
    """AZURE_STORAGE_CONNECTION_STRING as its parts (AccountName, AccountKey, BlobEndpoint, …)."""
    parts = (part.split("=", 1) for part in os.environ.get(CONNECTION_STRING, "").split(";") if "=" in part)
    return {name.strip(): value.strip() for name, value in parts}


def connection_account() -> str:
    """The account of the connection string in the environment ("" without one)."""
    return _connection().get("AccountName", "")


def azure_account(uri: str, options: dict) -> tuple[str, str, str, str]:
    """(account, key, SAS token, blob endpoint) of an az:// or abfss:// table: the options, the URL's host
    (``abfss://container@account.dfs.core.windows.net``), else the connection string."""
    host = urlsplit(uri).netloc
    from_url = host.split("@", 1)[1].split(".", 1)[0] if "@" in host else ""
    connection = _connection()
    account = _given(options, "azure_storage_account_name", "account_name") or from_url or connection.get(
        "AccountName", "")
    key = _given(options, "azure_storage_account_key", "azure_storage_access_key", "account_key", "access_key")
    sas = _given(options, "azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token")
    endpoint = _given(options, "azure_storage_endpoint", "azure_endpoint", "endpoint")
    if connection.get("AccountName", account) == account:
        key = key or connection.get("AccountKey", "")
        sas = sas or connection.get("SharedAccessSignature", "")
        endpoint = endpoint or connection.get("BlobEndpoint", "")
    return account, key, sas, endpoint.rstrip("/")


def gcs_emulator(uri: str) -> str:
    """The http(s):// address of the GCS emulator a gs:// ``uri`` is reached at ("" for Google itself)."""
    address = os.environ.get(GCS_EMULATOR, "").rstrip("/") if scheme(uri) == "gs" else ""
    return address if "://" in address or not address else f"http://{address}"


def delta_options(uri: str, options: dict) -> dict[str, str]:
    """What delta-rs gets for the table at ``uri``: ``options`` with what the sources' chain adds (delta-rs reads
    the AWS_* variables and Google's chain itself, not an Azure connection string nor STORAGE_EMULATOR_HOST: an
    emulator is object_store's service-account key with another ``gcs_base_url`` and no OAuth)."""
    found = dict(options)
    emulator = gcs_emulator(uri)
    if emulator and not _given(found, "google_service_account", "service_account", "google_service_account_path",
                               "service_account_path", "google_service_account_key", "service_account_key",
                               "google_application_credentials"):
        found["google_service_account_key"] = json.dumps({"gcs_base_url": emulator, "disable_oauth": True,
                                                          "client_email": "", "private_key": "",
                                                          "private_key_id": ""})
    if scheme(uri) in AZURE_SCHEMES:
        account, key, sas, endpoint = azure_account(uri, options)
        keyless = not (key or sas or _given(options, *_AZURE_LOGINS))
        defaults = {"azure_storage_account_name": account, "azure_storage_account_key": key,
                    "azure_storage_sas_key": sas if not key else "", "azure_storage_endpoint": endpoint,
                    "msi_endpoint": os.environ.get(IDENTITY_ENDPOINT, "") if keyless else ""}
        found.update({name: value for name, value in defaults.items() if value and not _given(found, name)})
    endpoint = (_given(found, "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint",
                       "azure_storage_endpoint", "azure_endpoint")
                or (os.environ.get("AWS_ENDPOINT_URL", "") if scheme(uri) in ("s3", "s3a") else ""))
    if endpoint.startswith("http://") and not _given(found, "allow_http", "aws_allow_http", "azure_allow_http"):
        found["allow_http"] = "true"
    return found


def arrow_fs(uri: str, options: dict) -> tuple[pafs.FileSystem, str]:
    """(pyarrow file system, the table's folder in it) for ``uri``, reaching the store delta-rs reaches."""
    import pyarrow.fs as pafs

    kind = scheme(uri)
    parts = urlsplit(uri)
    if kind in ("s3", "s3a"):
        return _s3(options), f"{parts.netloc}{parts.path}".rstrip("/")
    if kind in AZURE_SCHEMES:
        container = parts.netloc.split("@", 1)[0]
        return _azure(uri, options), f"{container}{parts.path}".rstrip("/")
    if gcs_emulator(uri):
        emulator = urlsplit(gcs_emulator(uri))
        return (pafs.GcsFileSystem(anonymous=True, endpoint_override=emulator.netloc, scheme=emulator.scheme),
                f"{parts.netloc}{parts.path}".rstrip("/"))
    return pafs.FileSystem.from_uri(uri if "://" in uri else os.path.abspath(uri))


def _s3(options: dict) -> pafs.S3FileSystem:
    """pyarrow's S3 with the options' endpoint, region and login; what they leave out, pyarrow takes from the
    environment and ~/.aws as boto3 and delta-rs do."""
    import pyarrow.fs as pafs

    endpoint = _given(options, "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint") or os.environ.get(
        "AWS_ENDPOINT_URL", "")
    settings = {"region": _given(options, "aws_region", "region", "aws_default_region") or None,
                "access_key": _given(options, "aws_access_key_id", "access_key_id") or None,
                "secret_key": _given(options, "aws_secret_access_key", "secret_access_key") or None,
                "session_token": _given(options, "aws_session_token", "session_token", "token") or None}
    if endpoint:
        split = urlsplit(endpoint)
        settings.update(endpoint_override=split.netloc, scheme=split.scheme or "https")
    return pafs.S3FileSystem(**{name: value for name, value in settings.items() if value is not None})


def _azure(uri: str, options: dict) -> pafs.FileSystem:
    """fsspec's Azure Blob file system (adlfs) for the account delta-rs is given, an endpoint of its own too
    (Azurite, a sovereign cloud); pyarrow's own aborts the process on an error answer without a body."""
    import pyarrow.fs as pafs
    from adlfs import AzureBlobFileSystem

    account, key, sas, endpoint = azure_account(uri, options)
    if endpoint and key:
        protocol = urlsplit(endpoint).scheme
        store = AzureBlobFileSystem(connection_string=f"DefaultEndpointsProtocol={protocol};AccountName={account};"
                                                      f"AccountKey={key};BlobEndpoint={endpoint};")
    else:  # a SAS token, else Azure's credential chain (DefaultAzureCredential), as delta-rs does
        store = AzureBlobFileSystem(account_name=account, account_key=key or None, sas_token=sas or None, anon=False,
                                    account_host=endpoint.split("://", 1)[1] if endpoint else None)
    return pafs.PyFileSystem(pafs.FSSpecHandler(store))


def failures() -> tuple[type, ...]:
    """What a call to a table's store may raise besides delta-rs's errors: pyarrow's OSError, and adlfs's Azure
    SDK errors (imported when there, so a table elsewhere needs no Azure library) and the RuntimeError it wraps
    a failed upload in ("Failed to upload block: …")."""
    try:
        from azure.core.exceptions import AzureError
    except ImportError:
        return (OSError,)
    return (OSError, AzureError, RuntimeError)
