"""Where the crawl's work folder is, spelled as Beam's file systems write it: the workers write their counts,
problems and delete candidates there and the command reads them back, both through Beam (pipeline/graph.py,
pipeline/report.py), so the folder must be one Beam has a file system for.

A path, ``s3://`` and ``gs://`` are Beam's as written. A folder in Azure Blob Storage, written as the az://
sources and the Delta table write one (``az://container/prefix``, ``abfs(s)://`` alike, or
``abfss://container@account.dfs.core.windows.net/prefix``), is Beam's ``azfs://account/container/prefix``.
Beam's Azure client logs in with ``AZURE_STORAGE_CONNECTION_STRING`` (as the sources and the table do), else
with Azure's credential chain at ``--blob_service_endpoint``; the account is the URL's, else the connection
string's. Nothing of the login is in the URL.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from beamtrawl.transforms.index import table_store

_CONTAINER = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9]")  # Azure's rule, which Beam's paths check
_ACCOUNT = re.compile(r"[a-z0-9]{3,24}")
_HOME = re.compile(r"([^@]+)@([^.@]+)\.(?:dfs|blob)\.[^@/:]+")  # container@account.dfs.core.windows.net


def beam_folder(folder: str) -> str:
    """``folder`` as Beam's file systems name it; ValueError saying what is wrong with a folder in Azure."""
    if table_store.scheme(folder) not in table_store.AZURE_SCHEMES:
        return folder
    parts = urlsplit(folder)
    if parts.query or parts.fragment or "?" in folder:
        raise ValueError("a folder in Azure holds no query (a SAS is a login: give it in no URL)")
    home = _HOME.fullmatch(parts.netloc)
    container = home.group(1) if home else parts.netloc
    if "@" in parts.netloc and not home:
        raise ValueError("an Azure folder with an account is abfss://container@account.dfs.core.windows.net/…")
    if not _CONTAINER.fullmatch(container):
        raise ValueError(f"{container!r}: a container name is 3-63 lower case letters, digits or single '-'")
    account = table_store.azure_account(folder, {})[0]
    known = table_store.connection_account()
    if not account:
        raise ValueError(f"no Azure account: set {table_store.CONNECTION_STRING} (as for az:// sources) or write "
                         f"abfss://{container}@ACCOUNT.dfs.core.windows.net/…")
    if home and known and known != account:  # Beam would write with the connection string: to another account
        raise ValueError(f"the account {account!r} is not the one of {table_store.CONNECTION_STRING} ({known!r})")
    if not _ACCOUNT.fullmatch(account):
        raise ValueError(f"{account!r}: an account name is 3-24 lower case letters or digits")
    return f"azfs://{account}/{container}/{parts.path.strip('/')}".rstrip("/")
