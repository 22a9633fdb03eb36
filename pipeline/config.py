"""The crawl configuration: one YAML file, every default in one place, validated before anything runs.

An error names the file, the key path and the problem in one line, e.g.
``crawl.yaml: whitelist[2].regex: unbalanced parenthesis at position 7``. Unknown keys are errors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from beamtrawl.pipeline.preparator_config import parse_preparation, parse_preparators
from beamtrawl.plugins.config import parse_plugins
from beamtrawl.transforms.enrich.access import parse_access_control
from beamtrawl.transforms.enrich.auxfields import DEFAULT_AUX_FIELDS, parse_aux_fields
from beamtrawl.transforms.preparators import BUILTIN, PreparatorSpec
from beamtrawl.transforms.preparators.isolation import DEFAULT_BOUNDS, Bounds
from beamtrawl.transforms.sources import known as known_scheme
from beamtrawl.transforms.sources import schemes as source_schemes
from beamtrawl.transforms.urls import is_under, normalize_url, readable_url

#: Every default, spelled as in the YAML file.
DEFAULTS: dict[str, Any] = {
    "url_cleaners": [],
    "max_depth": None,  # folder levels below a start URL; None = unlimited
    "max_file_size": 100 * 1024**2,  # larger documents are indexed by metadata only
    "max_summary_length": 250_000,  # regain's MaxSummaryLength
    "max_failed_ratio": 0.2,  # more failed documents than this: no deletes, exit 2
    "max_delete_ratio": 0.5,  # deletes would remove more than this share of the index: none run, exit 2
    "follow_symlinks": False,
    "walk_budget": 5_000,  # folder entries one discovery step lists before handing sub-folders on
    "discovery_rounds": 3,  # rounds unrolled in the graph; the last walks without a budget
}

SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
              "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_YAML_VALUES = 100_000  # values a file may expand to through its aliases (a "billion laughs" stops here)
MAX_MESSAGE = 300  # characters of an error message: a value quoted in it is cut, however large


class ConfigError(Exception):
    """A configuration mistake; ``str()`` is the one-line message for the user. ``key`` is the key path
    it concerns (``whitelist[2].regex``) when there is one."""

    def __init__(self, message: str, key: str = "", problem: str = ""):
        super().__init__(message)
        self.key, self.problem = key, problem or message


@dataclass(frozen=True)
class StartUrl:
    url: str
    parse: bool = True
    index: bool = True


@dataclass(frozen=True)
class UrlPattern:
    """A whitelist, blacklist or ``url_rules`` entry: a prefix (``startswith``; written as a person
    writes it, it is normalised as URLs are, so ``/srv/résumés`` matches) or a regex matching the whole
    URL as a person reads it — percent-escapes decoded, ``.*/résumés/.*`` and ``.*/my docs/.*`` —
    or as it is stored (``r%C3%A9sum%C3%A9s``, what rules written before matched)."""

    prefix: str | None = None
    regex: re.Pattern | None = None
    parse: bool = True
    index: bool = True
    name: str | None = None
    where: str = ""  # its place in the configuration (``whitelist[2]``), for the report

    def matches(self, url: str) -> bool:
        if self.prefix is not None:
            return url.startswith(self.prefix)
        return self.regex.fullmatch(url) is not None or (
            "%" in url and self.regex.fullmatch(readable_url(url)) is not None)

    def describe(self) -> str:
        return f"{self.where} ({'prefix ' + self.prefix if self.prefix is not None else 'regex ' + self.regex.pattern})"


@dataclass(frozen=True)
class Credential:
    """A login for every URL under ``url`` (scheme, host and optionally a path). The secret comes from
    ``${ENV}`` or a file and never appears in URLs, logs or the report: ``repr`` hides it."""

    url: str
    username: str
    password: str = field(repr=False)
    auth: str = "basic"  # HTTP only: basic or digest


def credential_for(credentials, url: str) -> Credential | None:
    """The credential with the longest ``url`` prefix of ``url``, if any. An IMAP folder's login serves its
    messages too (``Folder;UIDVALIDITY=n/;UID=m`` lies under ``Folder``)."""
    matching = [c for c in credentials if is_under(url, c.url.rstrip("/"))]
    return max(matching, key=lambda c: len(c.url)) if matching else None


#: The ``http:`` section (web crawling), every default spelled as in the YAML file.
HTTP_DEFAULTS: dict[str, Any] = {
    "user_agent": "beamtrawl/0.1 (+https://github.com/beamtrawl)",
    "delay": 1.0,  # seconds between two requests to one host (robots.txt Crawl-delay may ask for more)
    "concurrency_per_host": 2,  # requests in flight to one host
    "connect_timeout": 10.0,
    "read_timeout": 30.0,
    "total_timeout": 120.0,  # one page, redirects included
    "max_body": 10 * 1024**2,  # decompressed bytes; a larger page is reported and not indexed
    "max_redirects": 5,
    "max_pages_per_host": 100_000,  # a host cut there keeps all its indexed pages
    "max_cycle_count": 3,  # regain's MaxCycleCount (repeated path segments); -1 switches it off
    "max_query_strings_per_path": 200,  # distinct query strings on one path (calendar traps)
    "robots_txt": True,
    "honour_robots_meta": True,  # <meta name="robots" content="noindex, nofollow">
    "sitemaps": True,  # robots.txt Sitemap: lines and /sitemap.xml
    "block_private_addresses": False,  # true for public sites: never fetch private or loopback addresses
}


@dataclass(frozen=True)
class HttpConfig:
    user_agent: str = HTTP_DEFAULTS["user_agent"]
    delay: float = HTTP_DEFAULTS["delay"]
    concurrency_per_host: int = HTTP_DEFAULTS["concurrency_per_host"]
    connect_timeout: float = HTTP_DEFAULTS["connect_timeout"]
    read_timeout: float = HTTP_DEFAULTS["read_timeout"]
    total_timeout: float = HTTP_DEFAULTS["total_timeout"]
    max_body: int = HTTP_DEFAULTS["max_body"]
    max_redirects: int = HTTP_DEFAULTS["max_redirects"]
    max_pages_per_host: int = HTTP_DEFAULTS["max_pages_per_host"]
    max_cycle_count: int = HTTP_DEFAULTS["max_cycle_count"]
    max_query_strings_per_path: int = HTTP_DEFAULTS["max_query_strings_per_path"]
    robots_txt: bool = HTTP_DEFAULTS["robots_txt"]
    honour_robots_meta: bool = HTTP_DEFAULTS["honour_robots_meta"]
    sitemaps: bool = HTTP_DEFAULTS["sitemaps"]
    block_private_addresses: bool = HTTP_DEFAULTS["block_private_addresses"]


@dataclass(frozen=True)
class SmbConfig:
    """SMB settings: whether to read each file's Windows ACL into its groups, and the group name of a
    SID (SIDs not named here become groups spelled as the SID string, e.g. ``S-1-5-21-…-1001``)."""

    read_acls: bool = True
    sid_names: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ImapConfig:
    """IMAP settings: ``imap://`` logs in only after STARTTLS unless ``starttls`` is false (plain text,
    for trusted networks); ``ca_file`` names the certificates to trust instead of the system's."""

    starttls: bool = True
    ca_file: str | None = None


@dataclass(frozen=True)
class IndexConfig:
    """The embedded SQLite/FTS5 index (``path``) or an OpenSearch alias (``url`` and ``name``)."""

    path: str | None = None
    url: str | None = None
    name: str | None = None
    analyzer: str = "english"
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    verify_certs: bool = True
    timeout: float = 60.0
    compress: bool = False

    @property
    def label(self) -> str:
        return self.path or f"{self.url} ({self.name})"


@dataclass(frozen=True)
class Config:
    source: str
    start: tuple[StartUrl, ...]
    whitelist: tuple[UrlPattern, ...]
    blacklist: tuple[UrlPattern, ...]
    index: IndexConfig
    report: str
    work_dir: str
    url_cleaners: tuple[re.Pattern, ...] = ()
    credentials: tuple[Credential, ...] = ()
    http: HttpConfig = HttpConfig()
    smb: SmbConfig = SmbConfig()
    imap: ImapConfig = ImapConfig()
    max_depth: int | None = DEFAULTS["max_depth"]
    max_file_size: int = DEFAULTS["max_file_size"]
    max_summary_length: int = DEFAULTS["max_summary_length"]
    max_failed_ratio: float = DEFAULTS["max_failed_ratio"]
    max_delete_ratio: float = DEFAULTS["max_delete_ratio"]
    follow_symlinks: bool = DEFAULTS["follow_symlinks"]
    walk_budget: int = DEFAULTS["walk_budget"]
    discovery_rounds: int = DEFAULTS["discovery_rounds"]
    plugins: tuple = ()  # plugins.manager.PluginSpec, in configuration order
    auxiliary_fields: tuple = DEFAULT_AUX_FIELDS  # transforms.enrich.auxfields.AuxFieldSpec
    access_control: tuple = ()  # controllers (transforms.enrich.access); none: the sources' groups stay
    preparators: tuple[PreparatorSpec, ...] = BUILTIN  # pipeline/preparator_config.py
    preparation: Bounds = DEFAULT_BOUNDS


class _Reader:
    """Walks the parsed YAML keeping the key path, so every error can say where it is."""

    def __init__(self, source: str):
        self.source = source
        self.base = os.path.dirname(os.path.abspath(source))

    def fail(self, path: str, problem: str) -> ConfigError:
        if len(problem) > MAX_MESSAGE:  # a quoted value may be as large as the file allows
            problem = problem[:MAX_MESSAGE] + "…"
        return ConfigError(f"{self.source}: {path}: {problem}" if path else f"{self.source}: {problem}",
                           path, problem)

    def mapping(self, value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a mapping, got {_kind(value)}")
        for key in value:
            if key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                raise self.fail(where, f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for key in sorted(required):
            if key not in value:
                raise self.fail(f"{path}.{key}" if path else key, "is required")
        return value

    def seq(self, value: Any, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, got {_kind(value)}")
        return value

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, f"must be a non-empty string, got {_kind(value)}")
        return self.expand(value, path)

    def expand(self, value: str, path: str) -> str:
        def sub(match: re.Match) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise self.fail(path, f"environment variable {name} is not set")
            return os.environ[name]
        return _ENV_REF.sub(sub, value)

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"must be true or false, got {value!r}")
        return value

    def integer(self, value: Any, path: str, minimum: int = 0, allow_none: bool = False) -> int | None:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"must be an integer, got {value!r}")
        if value < minimum:
            raise self.fail(path, f"must be at least {minimum}, got {value}")
        return value

    def size(self, value: Any, path: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        if not match or match.group(2).lower() not in SIZE_UNITS or float(match.group(1)) <= 0:
            raise self.fail(path, f"must be a positive size such as 1048576, '10 MiB' or '2GB', got {value!r}")
        size = int(float(match.group(1)) * SIZE_UNITS[match.group(2).lower()])
        if size < 1:
            raise self.fail(path, f"must be at least 1 byte, got {value!r}")
        return size

    def ratio(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.fail(path, f"must be a number from 0 to 1, got {value!r}")
        return float(value)

    def regex(self, value: Any, path: str) -> re.Pattern:
        text = self.string(value, path)
        try:
            return re.compile(text)
        except re.error as err:
            raise self.fail(path, str(err)) from None

    def url(self, value: Any, path: str) -> str:
        text = self.string(value, path)
        if "://" not in text and not text.startswith("file:"):
            text = os.path.join(self.base, text)  # a plain path, relative to the configuration file
        if "\\" in text:
            raise self.fail(path, "use forward slashes in URLs")
        try:
            return normalize_url(text)
        except ValueError as err:
            raise self.fail(path, f"not a valid URL: {err}") from None


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__)


def _patterns(r: _Reader, raw: Any, key: str, with_flags: bool) -> tuple[UrlPattern, ...]:
    allowed = {"prefix", "regex"} | ({"parse", "index", "name"} if with_flags else set())
    patterns = []
    for i, entry in enumerate(r.seq(raw, key)):
        path = f"{key}[{i}]"
        entry = r.mapping(entry, path, allowed)
        if ("prefix" in entry) == ("regex" in entry):
            raise r.fail(path, "needs exactly one of 'prefix' or 'regex'")
        patterns.append(UrlPattern(
            prefix=r.url(entry["prefix"], f"{path}.prefix") if "prefix" in entry else None,
            regex=r.regex(entry["regex"], f"{path}.regex") if "regex" in entry else None,
            parse=r.boolean(entry.get("parse", True), f"{path}.parse"),
            index=r.boolean(entry.get("index", True), f"{path}.index"),
            name=r.string(entry["name"], f"{path}.name") if "name" in entry else None,
            where=path,
        ))
    return tuple(patterns)


_ANALYZERS = ("english", "german", "french", "italian", "standard")


def _index(r: _Reader, raw: Any) -> IndexConfig:
    keys = {"path", "url", "name", "analyzer", "username", "password", "ca_file", "verify_certs", "timeout",
            "compress"}
    raw = r.mapping(raw, "index", keys)
    if ("path" in raw) == ("url" in raw):
        raise r.fail("index", "needs either 'path' (the embedded index) or 'url' and 'name' (OpenSearch)")
    if "path" in raw:
        extra = sorted(set(raw) - {"path"})
        if extra:
            raise r.fail(f"index.{extra[0]}", "applies only to an OpenSearch index (with 'url')")
        return IndexConfig(path=os.path.normpath(os.path.join(r.base, r.string(raw["path"], "index.path"))))
    url = r.string(raw["url"], "index.url")
    if not url.startswith(("http://", "https://")):
        raise r.fail("index.url", f"must start with http:// or https://, got {url!r}")
    if "name" not in raw:
        raise r.fail("index.name", "is required with index.url")
    name = r.string(raw["name"], "index.name")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
        raise r.fail("index.name", f"must be lower case letters, digits, '_', '.' or '-', got {name!r}")
    analyzer = r.string(raw.get("analyzer", "english"), "index.analyzer")
    if analyzer not in _ANALYZERS:
        raise r.fail("index.analyzer", f"must be one of {', '.join(_ANALYZERS)}, got {analyzer!r}")
    ca_file = os.path.join(r.base, r.string(raw["ca_file"], "index.ca_file")) if "ca_file" in raw else None
    if ca_file and not os.path.isfile(ca_file):
        raise r.fail("index.ca_file", f"no such file: {ca_file}")
    timeout = raw.get("timeout", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise r.fail("index.timeout", f"must be a positive number of seconds, got {timeout!r}")
    return IndexConfig(
        url=url.rstrip("/"), name=name, analyzer=analyzer,
        username=r.string(raw["username"], "index.username") if "username" in raw else None,
        password=r.string(raw["password"], "index.password") if "password" in raw else None,
        ca_file=ca_file, verify_certs=r.boolean(raw.get("verify_certs", True), "index.verify_certs"),
        timeout=float(timeout), compress=r.boolean(raw.get("compress", False), "index.compress"))


def _credentials(r: _Reader, raw: Any) -> tuple[Credential, ...]:
    credentials = []
    for i, entry in enumerate(r.seq(raw, "credentials")):
        path = f"credentials[{i}]"
        entry = r.mapping(entry, path, {"url", "username", "password", "password_file", "auth"},
                          required={"url", "username"})
        if ("password" in entry) == ("password_file" in entry):
            raise r.fail(path, "needs exactly one of 'password' (use ${ENV}) or 'password_file'")
        if "password" in entry:
            password = r.string(entry["password"], f"{path}.password")
        else:
            secret = os.path.join(r.base, r.string(entry["password_file"], f"{path}.password_file"))
            try:
                with open(secret, encoding="utf-8") as handle:
                    password = handle.read().rstrip("\r\n")
            except OSError as err:
                raise r.fail(f"{path}.password_file", f"cannot read {secret}: {err.strerror}") from None
        auth = r.string(entry.get("auth", "basic"), f"{path}.auth")
        if auth not in ("basic", "digest"):
            raise r.fail(f"{path}.auth", f"must be basic or digest, got {auth!r}")
        url = r.string(entry["url"], f"{path}.url")
        if "://" not in url or "@" in url.split("://", 1)[1].split("/", 1)[0]:
            raise r.fail(f"{path}.url", "must be scheme://host[/path], without user or password in it")
        credentials.append(Credential(normalize_url(url), r.string(entry["username"], f"{path}.username"),
                                      password, auth))
    return tuple(credentials)


def _seconds(r: _Reader, value: Any, path: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise r.fail(path, f"must be a number of seconds of at least {minimum:g}, got {value!r}")
    return float(value)


_HTTP_KEYS: dict[str, Callable[[_Reader, Any, str], Any]] = {
    "user_agent": _Reader.string,
    "delay": _seconds,
    "concurrency_per_host": lambda r, v, p: r.integer(v, p, minimum=1),
    "connect_timeout": lambda r, v, p: _seconds(r, v, p, 0.001),
    "read_timeout": lambda r, v, p: _seconds(r, v, p, 0.001),
    "total_timeout": lambda r, v, p: _seconds(r, v, p, 0.001),
    "max_body": _Reader.size,
    "max_redirects": lambda r, v, p: r.integer(v, p),
    "max_pages_per_host": lambda r, v, p: r.integer(v, p, minimum=1),
    "max_cycle_count": lambda r, v, p: r.integer(v, p, minimum=-1),
    "max_query_strings_per_path": lambda r, v, p: r.integer(v, p, minimum=1),
    "robots_txt": _Reader.boolean,
    "honour_robots_meta": _Reader.boolean,
    "sitemaps": _Reader.boolean,
    "block_private_addresses": _Reader.boolean,
}


def _http(r: _Reader, raw: Any) -> HttpConfig:
    raw = r.mapping({} if raw is None else raw, "http", set(_HTTP_KEYS))
    return HttpConfig(**{key: fn(r, raw[key], f"http.{key}") for key, fn in _HTTP_KEYS.items() if key in raw})


def _smb(r: _Reader, raw: Any) -> SmbConfig:
    raw = r.mapping(raw, "smb", {"read_acls", "sid_names"})
    names = r.mapping(raw.get("sid_names") or {}, "smb.sid_names", set(raw.get("sid_names") or {}))
    sid_names = {}
    for sid, name in names.items():
        if not isinstance(sid, str) or not re.fullmatch(r"S-1(-\d+)+", sid):
            raise r.fail(f"smb.sid_names.{sid}", "must be a SID such as S-1-5-21-1004336348-1177238915-1001")
        sid_names[sid] = r.string(name, f"smb.sid_names.{sid}")
    return SmbConfig(r.boolean(raw.get("read_acls", True), "smb.read_acls"), sid_names)


def _imap(r: _Reader, raw: Any, crawling: bool) -> ImapConfig:
    raw = r.mapping(raw, "imap", {"starttls", "ca_file"})
    ca_file = os.path.join(r.base, r.string(raw["ca_file"], "imap.ca_file")) if "ca_file" in raw else None
    if crawling and ca_file and not os.path.isfile(ca_file):
        raise r.fail("imap.ca_file", f"no such file: {ca_file}")
    return ImapConfig(r.boolean(raw.get("starttls", True), "imap.starttls"), ca_file)


_TOP_KEYS = {"start", "whitelist", "blacklist", "index", "report", "work_dir", "credentials", "http", "smb", "imap",
             "plugins", "auxiliary_fields", "access_control", "preparators", "preparation", *DEFAULTS}
_SCALARS: dict[str, Callable[[_Reader, Any, str], Any]] = {
    "max_depth": lambda r, v, p: r.integer(v, p, allow_none=True),
    "max_file_size": _Reader.size,
    "max_summary_length": lambda r, v, p: r.integer(v, p, minimum=1),
    "max_failed_ratio": _Reader.ratio,
    "max_delete_ratio": _Reader.ratio,
    "follow_symlinks": _Reader.boolean,
    "walk_budget": lambda r, v, p: r.integer(v, p, minimum=1),
    "discovery_rounds": lambda r, v, p: r.integer(v, p, minimum=1),
}


def parse_config(raw: Any, source: str, crawling: bool = True) -> Config:
    """Validate parsed YAML; ``source`` names the file in errors and anchors relative paths.
    ``crawling=False`` (searching) checks the plugin entries without importing the plugins, and does
    not ask for files only a crawl opens (``imap.ca_file``)."""
    r = _Reader(source)
    top = r.mapping(raw, "", _TOP_KEYS, required={"start", "index"})

    starts = []
    for i, entry in enumerate(r.seq(top["start"], "start")):
        path = f"start[{i}]"
        entry = r.mapping(entry, path, {"url", "parse", "index"}, required={"url"})
        if re.match(r"https?://[^/]*@", str(entry["url"])):
            raise r.fail(f"{path}.url", "must not hold a user or password; put the login in credentials")
        url = r.url(entry["url"], f"{path}.url")
        scheme = url.split(":", 1)[0]
        if not known_scheme(scheme):  # the built-in sources and those registered by entry points
            raise r.fail(f"{path}.url", f"scheme '{scheme}' is not supported (supported: "
                                        f"{', '.join(source_schemes())})")
        if scheme == "smb" and not re.fullmatch(r"smb://[^/?#]+/[^?#]*", url):
            raise r.fail(f"{path}.url", "an smb:// start URL is smb://host[:port]/[share[/folder]]")
        starts.append(StartUrl(url, r.boolean(entry.get("parse", True), f"{path}.parse"),
                               r.boolean(entry.get("index", True), f"{path}.index")))
    if not starts:
        raise r.fail("start", "needs at least one start URL")

    if "whitelist" in top:
        whitelist = _patterns(r, top["whitelist"], "whitelist", with_flags=True)
    else:  # no whitelist: everything under the start URLs
        whitelist = tuple(UrlPattern(prefix=s.url) for s in starts)
    blacklist = _patterns(r, top.get("blacklist"), "blacklist", with_flags=False)
    for i, start in enumerate(starts):
        if not any(p.matches(start.url) or p.matches(start.url.rstrip("/") + "/") for p in whitelist):
            raise r.fail(f"start[{i}].url", f"{start.url} is matched by no whitelist entry, so nothing "
                                            "under it would be crawled")

    index = _index(r, top["index"])
    stem = os.path.splitext(index.path)[0] if index.path else os.path.join(r.base, f"beamtrawl-{index.name}")
    report = (os.path.normpath(os.path.join(r.base, r.string(top["report"], "report"))) if "report" in top
              else stem + ".report.json")
    work_dir = r.string(top["work_dir"], "work_dir") if "work_dir" in top else stem + ".work"
    if "://" not in work_dir:
        work_dir = os.path.join(r.base, work_dir)

    scalars = {key: fn(r, top[key], key) for key, fn in _SCALARS.items() if key in top}
    cleaners = tuple(r.regex(v, f"url_cleaners[{i}]") for i, v in enumerate(r.seq(top.get("url_cleaners"),
                                                                                   "url_cleaners")))
    return Config(source=source, start=tuple(starts), whitelist=whitelist, blacklist=blacklist,
                  index=index, report=report, work_dir=work_dir,
                  url_cleaners=cleaners, credentials=_credentials(r, top.get("credentials")),
                  plugins=parse_plugins(r, top.get("plugins"), load=crawling),
                  auxiliary_fields=parse_aux_fields(r, top.get("auxiliary_fields")),
                  access_control=parse_access_control(r, top.get("access_control")),
                  preparators=parse_preparators(r, top.get("preparators")),
                  preparation=parse_preparation(r, top.get("preparation")),
                  http=_http(r, top.get("http")), smb=_smb(r, top.get("smb") or {}),
                  imap=_imap(r, top.get("imap") or {}, crawling), **scalars)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what it would accept silently: a key given twice in one mapping (the
    last would win) and aliases that expand to more than :data:`MAX_YAML_VALUES` values."""

    def compose_document(self):
        node = super().compose_document()
        if _expanded_size(node, {}) > MAX_YAML_VALUES:
            raise yaml.YAMLError(f"aliases expand to more than {MAX_YAML_VALUES} values")
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<: *defaults" is overridden by the keys beside it, by design
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if isinstance(key, (str, int, float, bool)) and key in first_line:
                    raise yaml.MarkedYAMLError(problem=f"duplicate key {str(key)[:80]!r} (first at line "
                                                       f"{first_line[key]})", problem_mark=key_node.start_mark)
                if isinstance(key, (str, int, float, bool)):
                    first_line[key] = line
        return super().construct_mapping(node, deep)


def _expanded_size(node, sizes: dict) -> int:
    """How many values ``node`` stands for once every alias in it is expanded (an alias shares its node,
    so each node is counted once and its size reused); a node that contains itself counts as too many."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_YAML_VALUES + 1  # while it is being counted: reaching it again is a cycle
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    sizes[id(node)] = min(size, MAX_YAML_VALUES + 1)
    return sizes[id(node)]


def load_config(path: str, crawling: bool = True, overrides: Sequence[str] = ()) -> Config:
    """Read and validate the YAML file at ``path``; raises :class:`ConfigError` with a one-line message.
    ``overrides`` are ``--set key.path=value`` options, applied before validation; an error in a key one
    of them set names that option."""
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.load(handle, Loader=_Loader)
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                          f"{err.start})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"{path}: {where}{getattr(err, 'problem', None) or err}"[:MAX_MESSAGE]) from None
    keys = [_override(raw, option) for option in overrides]
    try:
        return parse_config(raw, path, crawling)
    except ConfigError as err:
        for key, option in zip(keys, overrides, strict=True):
            if err.key == key or err.key.startswith((f"{key}.", f"{key}[")) or key.startswith(f"{err.key}."):
                raise ConfigError(f"--set {_shown(option, 200)}: {_shown(err.key, 200)}: {_shown(err.problem)}",
                                  err.key) from None
        raise


_KEY_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def _shown(option: str, limit: int = MAX_MESSAGE) -> str:
    return option if len(option) <= limit else option[:limit] + "…"


def _override(raw: Any, option: str) -> str:
    """Apply one ``key.path=value`` to the parsed file: ``value`` is read as YAML (``true``, ``5``,
    ``[a, b]``), ``key.path`` names mappings by key and lists by ``[index]``. Returns the key path."""
    key, sep, text = option.partition("=")
    parts = [_KEY_PART.fullmatch(part) for part in key.strip().split(".")]
    if not sep or not all(parts):
        raise ConfigError(f"--set {_shown(option)}: expected KEY.PATH=VALUE, e.g. index.path=/srv/index.sqlite")
    steps: list[str | int] = []
    for part in parts:
        steps.append(part.group(1))
        steps.extend(int(n) for n in re.findall(r"\d+", part.group(2)))
    try:
        value = yaml.load(text, Loader=_Loader) if text.strip() else text
    except yaml.YAMLError as err:
        raise ConfigError(f"--set {_shown(option)}: the value is not YAML: {getattr(err, 'problem', err)}") from None
    node, path = raw, ""
    for i, step in enumerate(steps):
        if isinstance(step, int):
            if not isinstance(node, list) or not 0 <= step < len(node):
                raise ConfigError(f"--set {_shown(option)}: {path} has no item [{step}]", path)
        elif not isinstance(node, dict):
            raise ConfigError(f"--set {_shown(option)}: {path or 'the file'} is not a mapping", path)
        if i == len(steps) - 1:
            node[step] = value
        else:
            if isinstance(step, str) and node.get(step) is None:
                node[step] = {}
            node = node[step]
        path = f"{path}[{step}]" if isinstance(step, int) else f"{path}.{step}" if path else step
    return path
