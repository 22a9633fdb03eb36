"""``beamtrawl init [START_URL …]``: a commented starter configuration that crawls as written.

Each start URL gets its whitelist prefix; its source says what else the file needs (its Starter capability:
the section it uses, whether it logs in — the password then read from an environment variable, so no secret
is written into the file); a source without one brings its section with every key at its default.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from beamtrawl.transforms.sources import known, schemes, source_for, start_problem
from beamtrawl.transforms.sources.base import Starter, StartHints, capable
from beamtrawl.transforms.sources.settings import section_name
from beamtrawl.transforms.urls import normalize_url

_ENV_NAME = re.compile(r"[^A-Z0-9]+")


def _url(text: str) -> str:
    """A start URL for ``text``; a local path must exist. Raises ValueError with the reason."""
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if not known(scheme):
            raise ValueError(f"{text}: beamtrawl crawls {', '.join(schemes())} URLs, not {scheme}://")
        url = normalize_url(text)
        problem = start_problem(url)  # the check the configuration makes: a file it would refuse is not written
        if problem:
            raise ValueError(f"{text}: {problem}")
        return url
    try:
        path = Path(text).resolve()
        if not path.exists():
            raise ValueError(f"{text}: no such file or folder")
    except OSError as err:  # a name too long for the file system
        raise ValueError(f"{text[:100]}: {err.strerror}") from None
    return path.as_uri()


def _hints(url: str) -> tuple[type, StartHints]:
    """``url``'s source and what the starter file says about it (its Starter capability; without one, the source's
    section with every key commented out at its default)."""
    kind = source_for(url)
    hints = kind.start_hints(url) if capable(kind, Starter) else StartHints()
    if not hints.lines and getattr(kind, "Settings", None) is not None:
        hints = hints._replace(lines=_section_lines(kind))
    return kind, hints


def _section_lines(kind: type) -> tuple[str, ...]:
    """A source's section, each key commented out at its default with its documentation."""
    from beamtrawl.pipeline.config.reference import field_docs

    model = kind.Settings
    docs = field_docs(model)
    about = " ".join((model.__doc__ or "").split()).split("; ")[0]
    lines = [f"{section_name(kind) + ':':<31}# {about}"]
    for name, field in model.model_fields.items():
        if field.is_required():  # no default to fall back on: written open, for the person to fill in
            lines.append(f"  {name}:{'':<24}# required: {docs.get(name, '')}".rstrip())
            continue
        default = json.dumps(field.get_default(call_default_factory=True), default=str, ensure_ascii=False)
        lines.append(f"  # {name}: {default:<24}# {docs.get(name, '')}".rstrip())
    return tuple(lines)


def _embeddings_lines() -> list[str]:
    """The ``embeddings`` section commented out, with the built-in model and every key's default: off unless
    uncommented, since turning it on re-prepares every document once (docs/search.md)."""
    from beamtrawl.pipeline.config.reference import field_docs
    from beamtrawl.transforms.embed import settings_model

    model = settings_model("wordllama")
    docs = field_docs(model)
    lines = [(f"{'# embeddings:':<31}# search by meaning too (docs/search.md): uncomment to turn it on; the next crawl "
             "embeds every document once")]
    for name, field in model.model_fields.items():
        default = json.dumps(field.get_default(call_default_factory=True), default=str, ensure_ascii=False)
        lines.append(f"{f'#   {name}: {default}':<31}# {docs.get(name, '')}".rstrip())
    return lines


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
    hints = [_hints(u) for u in urls]
    lines = ["# beamtrawl crawl configuration, written by `beamtrawl init`. Every key and its default:",
             "# README.md, section 'Configuration'. Paths without a scheme are relative to this file.",
             "# Crawl:  beamtrawl crawl THIS_FILE      Search:  beamtrawl search WORDS --config THIS_FILE",
             "start:                         # parse: follow links / list folders; index: index the start page itself"]
    lines += [f"  - {{url: \"{u}\", parse: true, index: {'true' if h.index else 'false'}}}" for u, (_, h) in zip(urls, hints)]
    lines += ["whitelist:                     # only URLs under these prefixes are crawled"]
    lines += [f"  - {{prefix: \"{h.prefix or u}\"}}" for u, (_, h) in zip(urls, hints)]
    lines += ["blacklist:                     # never crawled (regexes match the whole URL)",
              '  - {regex: ".*/\\\\.git/.*"}',
              '  - {regex: ".*~$"}',
              (f"index: {{kind: sqlite, path: \"{index_path}\"}}   # the embedded index; OpenSearch: "
               "{kind: opensearch, url: …, name: docs}"),
              "max_failed_ratio: 0.2          # more failed documents than this share: no deletes, exit 2",
              "max_delete_ratio: 0.5          # deletes would remove more than this share: none run, exit 2",
              *_embeddings_lines()]
    for source_hints in dict(hints).values():  # once per source, in the order of the start URLs
        lines += source_hints.lines
    logins = [u for u, (_, h) in zip(urls, hints) if h.login]
    if logins:
        lines += ["credentials:                    # the password comes from the environment, never from this file"]
        for u in logins:
            prefix = u.split("://", 1)[0] + "://" + u.split("://", 1)[1].split("/", 1)[0] + "/"
            lines.append(f'  - {{url: "{prefix}", username: "{os.environ.get("USER", "crawler")}", '
                         f'password: "${{{_password_variable(u)}}}"}}')
    return "\n".join(lines) + "\n"
