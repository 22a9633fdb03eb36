"""``beamtrawl init [START_URL …]``: a commented starter configuration that crawls as written.

Each start URL gets its whitelist prefix; web, SMB, IMAP and S3 URLs bring the sections they use, with the
login read from an environment variable (S3: boto3's own chain), so no secret is written into the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from beamtrawl.transforms.sources import known, schemes
from beamtrawl.transforms.urls import normalize_url, url_to_path

_ENV_NAME = re.compile(r"[^A-Z0-9]+")


def _url(text: str) -> str:
    """A start URL for ``text``; a local path must exist. Raises ValueError with the reason."""
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if not known(scheme):
            raise ValueError(f"{text}: beamtrawl crawls {', '.join(schemes())} URLs, not {scheme}://")
        return normalize_url(text)
    path = Path(text).resolve()
    if not path.exists():
        raise ValueError(f"{text}: no such file or folder")
    return path.as_uri()


def _indexed(url: str) -> bool:
    """Whether the start URL itself is a document: a web page, a single file or an object's key (a folder, a
    bucket or a prefix ending in / is not)."""
    return url.startswith("http") or (url.startswith("file:") and Path(url_to_path(url)).is_file()) or (
        url.startswith("s3:") and not url.endswith("/"))


def _prefix(url: str) -> str:
    """A web start page's folder (``…/docs/index.html`` → ``…/docs/``); any other start URL itself."""
    if url.split("://", 1)[0] in {"http", "https"} and url.count("/") > 2 and not url.endswith("/"):
        return url.rsplit("/", 1)[0] + "/"
    return url


def _password_variable(url: str) -> str:
    host = url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
    return f"{_ENV_NAME.sub('_', host.upper()).strip('_')}_PASSWORD"


def index_for(config_file: str) -> str:
    """The index a configuration written to ``config_file`` fills, named after it and beside it
    (``docs.yaml`` → ``docs-index.sqlite``): two configurations in one folder get two indexes."""
    return f"{Path(config_file).stem}-index.sqlite"


def starter_config(start: list[str], index_path: str = "crawl-index.sqlite") -> str:
    """The text of the file (YAML with comments)."""
    urls = [_url(s) for s in start] or [Path.cwd().as_uri()]
    schemes = {u.split("://", 1)[0] for u in urls}
    lines = ["# beamtrawl crawl configuration, written by `beamtrawl init`. Every key and its default:",
             "# README.md, section 'Configuration'. Paths without a scheme are relative to this file.",
             "# Crawl:  beamtrawl crawl THIS_FILE      Search:  beamtrawl search WORDS --config THIS_FILE",
             "start:                         # parse: follow links / list folders; index: index the start page itself"]
    lines += [f"  - {{url: \"{u}\", parse: true, index: {'true' if _indexed(u) else 'false'}}}" for u in urls]
    lines += ["whitelist:                     # only URLs under these prefixes are crawled"]
    lines += [f"  - {{prefix: \"{_prefix(u)}\"}}" for u in urls]
    lines += ["blacklist:                     # never crawled (regexes match the whole URL)",
              '  - {regex: ".*/\\\\.git/.*"}',
              '  - {regex: ".*~$"}',
              f"index: {{path: \"{index_path}\"}}   # the embedded index; or {{url: https://…, name: docs}} for OpenSearch",
              "max_failed_ratio: 0.2          # more failed documents than this share: no deletes, exit 2",
              "max_delete_ratio: 0.5          # deletes would remove more than this share: none run, exit 2"]
    if "file" in schemes:
        lines += ["# follow_symlinks: true        # follow symbolic links (each target indexed once); off: skipped, counted"]
    if {"http", "https"} & schemes:
        lines += ["http:",
                  '  user_agent: "beamtrawl (+mailto:you@example.org)"   # say who crawls, and how to reach you',
                  "  delay: 1.0                   # seconds between requests to one host (robots.txt may ask more)",
                  "  robots_txt: true             # obey robots.txt",
                  "# max_depth: 10                # at most this many links (or folder levels) from a start URL"]
    logins = [u for u in urls if u.split("://", 1)[0] in {"smb", "imap", "imaps"}]
    if logins:
        lines += ["credentials:                    # the password comes from the environment, never from this file"]
        for u in logins:
            prefix = u.split("://", 1)[0] + "://" + u.split("://", 1)[1].split("/", 1)[0] + "/"
            lines.append(f'  - {{url: "{prefix}", username: "{os.environ.get("USER", "crawler")}", '
                         f'password: "${{{_password_variable(u)}}}"}}')
    if "smb" in schemes:
        lines += ["smb:", "  read_acls: true              # each file's Windows ACL decides who finds it"]
    if "imap" in schemes:
        lines += ["imap:", "  starttls: true               # imap:// logs in only after STARTTLS"]
    if "s3" in schemes:
        lines += ["s3:                              # the login: boto3's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,",
                  "                                 # ~/.aws or an instance role), never this file",
                  "  # endpoint_url: http://127.0.0.1:9000   # an S3-compatible store (or AWS_ENDPOINT_URL); not given: AWS",
                  "  # region: eu-west-1",
                  "  max_attempts: 4               # tries of one request; then the prefix keeps its documents"]
    return "\n".join(lines) + "\n"
