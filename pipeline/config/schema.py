"""The crawl file's schema: every section, every key, its type and its default, each written once here
(or in the value type a section builds, which the section then names). The reference in
docs/configuration-reference.md is generated from these models (:mod:`pipeline.config.reference`)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from beamtrawl.pipeline.config.access import AccessEntry
from beamtrawl.pipeline.config.auxfields import AuxFieldEntry
from beamtrawl.pipeline.config.fields import (
    Count,
    Delay,
    ExistingFile,
    FileWhenCrawling,
    Flag,
    Items,
    OrEmpty,
    Path,
    Problem,
    Ratio,
    Regex,
    Seconds,
    Section,
    Size,
    Text,
    Url,
    context,
    exactly_one,
    fail,
    matching,
)
from beamtrawl.pipeline.config.ocr import OcrSection
from beamtrawl.pipeline.config.plugins import PluginEntry
from beamtrawl.pipeline.config.preparators import PreparationSection, PreparatorEntry
from beamtrawl.transforms.sources import BUILTIN, RegistryError, known, schemes, source_class
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.urls import normalize_url
from beamtrawl.transforms.values import Credential, Limits, NodeOptions, StartUrl, UrlPattern
from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
_PATH_HINT = "(a relative path with ':' in its first folder is written ./folder)"


class StartEntry(Section):
    """A start URL (a plain path is a folder or file relative to the configuration file)."""

    url: Url
    """where the crawl starts: file, http(s), smb, imap(s) or s3 URL, or a path"""
    parse: Flag = StartUrl.parse
    """list its folder / follow its links"""
    index: Flag = StartUrl.index
    """put it in the index"""

    @field_validator("url", mode="before")
    @classmethod
    def _crawlable(cls, url):
        """A scheme no source reads (``javascript:``, ``mailto:``, ``gopher://``) is refused here, before a plain
        path is made of it; one letter is a Windows drive (``C:/docs``), read as a path as any other."""
        text = url.strip() if isinstance(url, str) else ""  # as the URL is read: " mailto:x" is mailto
        written = _SCHEME.match(text)
        if written and not known(written.group(1).lower()):  # the built-ins and those of entry points
            raise fail(f"scheme '{written.group(1).lower()}' is not crawlable; sources: {', '.join(schemes())} "
                       f"{_PATH_HINT}")
        if written and written.group(1).lower() != "file" and not text[written.end():].startswith("//"):
            scheme = written.group(1).lower()  # "http:/host" is a typo, not a folder named "http:"
            raise fail(f"{scheme}: URLs are written {scheme}://host/… {_PATH_HINT}")
        if re.match(r"[a-z][a-z0-9+.-]*://[^/]*@", text, re.IGNORECASE):  # any scheme: the URL is indexed
            raise fail("must not hold a user or password; put the login in credentials")
        return url

    @field_validator("url")
    @classmethod
    def _supported(cls, url: str, info: ValidationInfo) -> str:
        scheme = url.split(":", 1)[0]
        if context(info)["crawling"] and scheme not in BUILTIN:
            try:
                source_class(scheme)  # another distribution's source loads now, not on a worker mid-crawl
            except RegistryError as err:
                raise fail(str(err)) from None
        if scheme == "s3" and not re.fullmatch(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^?#]*", url):
            raise fail("an s3:// start URL is s3://bucket/[prefix/] (a bucket name is 3-63 lower case letters, "
                       "digits, '.' or '-')")
        if scheme == "smb" and not re.fullmatch(r"smb://[^/?#]+/[^?#]*", url):
            raise fail("an smb:// start URL is smb://host[:port]/[share[/folder]]")
        return url

    def value(self) -> StartUrl:
        return StartUrl(self.url, self.parse, self.index)


class PatternEntry(Section):
    """A blacklist entry: exactly one of a prefix or a regex."""

    prefix: Url | None = None
    """URLs starting with this (written as a person writes it; a plain path is relative to the file)"""
    regex: Regex | None = None
    """URLs this regex matches whole (as a person reads them, or percent-escaped)"""

    _one_of = exactly_one("prefix", "regex")

    def value(self, where: str) -> UrlPattern:
        return UrlPattern(prefix=self.prefix, regex=self.regex, where=where)


class WhitelistEntry(PatternEntry):
    """A whitelist entry: a prefix or a regex, and the flags of the URLs it accepts."""

    parse: Flag = UrlPattern.parse
    """follow links / list folders of the URLs it accepts"""
    index: Flag = UrlPattern.index
    """index the URLs it accepts"""
    name: Text | None = None
    """a label for the entry"""

    def value(self, where: str) -> UrlPattern:
        return UrlPattern(self.prefix, self.regex, self.parse, self.index, self.name, where)


MAX_PASSWORD_FILE = 64 * 1024


class CredentialEntry(Section):
    """A login for every URL under ``url``; the password from ``${ENV}`` or a file, never in the URL."""

    url: Text
    """scheme://host[/path] the login serves"""
    username: Text
    """the login's user name"""
    password: Text | None = None
    """the password, as ``${ENV_VAR}``"""
    password_file: Path | None = None
    """a file holding the password (relative to the configuration file)"""
    auth: Literal["basic", "digest"] = Credential.auth
    """HTTP only: basic or digest"""

    @field_validator("url")
    @classmethod
    def _no_login(cls, url: str) -> str:
        if "://" not in url or "@" in url.split("://", 1)[1].split("/", 1)[0]:
            raise fail("must be scheme://host[/path], without user or password in it")
        try:
            return normalize_url(url)
        except ValueError as err:
            raise fail(f"not a valid URL: {err}") from None

    _one_secret = exactly_one("password", "password_file", hint=" (use ${ENV})")

    def value(self, where: str) -> Credential:
        password = self.password
        if password is None:
            try:
                with open(self.password_file, "rb") as handle:
                    data = handle.read(MAX_PASSWORD_FILE + 1)  # a device (/dev/zero) is never read to its end
                if len(data) > MAX_PASSWORD_FILE:
                    raise Problem(f"{where}.password_file", f"{self.password_file} is larger than "
                                                            f"{MAX_PASSWORD_FILE} bytes: not a password file")
                password = data.decode("utf-8").rstrip("\r\n")
            except OSError as err:
                raise Problem(f"{where}.password_file", f"cannot read {self.password_file}: {err.strerror}") from None
            except UnicodeDecodeError as err:
                raise Problem(f"{where}.password_file", f"{self.password_file} is not UTF-8 text (byte "
                                                        f"0x{err.object[err.start]:02x} at offset {err.start})") from None
        return Credential(self.url, self.username, password, self.auth)


IndexName = matching(r"[a-z0-9][a-z0-9_.-]*", "must be lower case letters, digits, '_', '.' or '-', got {value!r}")


def _table_scheme(location: str) -> str:
    if "://" in location and not re.match(r"(file:///|(s3|s3a|gs|gcs|az|abfss?)://[^/\s])", location):
        raise fail(f"must be a path or a file://, s3://, gs:// or abfss:// URL with its bucket, got {location!r}")
    return location


class IndexConfig(Section):
    """The embedded SQLite/FTS5 index (``path``), an OpenSearch alias (``url`` and ``name``) or an open table
    (``table``: docs/table.md)."""

    path: Path | None = None
    """the embedded index's file (relative to the configuration file)"""
    table: Annotated[Path, AfterValidator(_table_scheme)] | None = None
    """a Delta table: a folder (relative to the configuration file) or a file/s3/gs/az/abfss URL"""
    format: Literal["delta"] = "delta"
    """table: the open table format (Delta Lake through delta-rs; docs/table.md says why not Iceberg)"""
    storage_options: Annotated[dict[str, Text], OrEmpty,
                               AfterValidator(lambda options: tuple(sorted(options.items())))] = ()
    """table: options for delta-rs's object stores (credentials as ``${ENV_VAR}``)"""
    url: Text | None = None
    """OpenSearch: the node's http(s):// URL"""
    name: IndexName | None = None
    """OpenSearch: the alias (lower case letters, digits, '_', '.' or '-')"""
    analyzer: Literal["english", "german", "french", "italian", "standard"] = NodeOptions._field_defaults["analyzer"]
    """OpenSearch: the text analyzer"""
    username: Text | None = None
    """OpenSearch: the login"""
    password: Text | None = Field(None, repr=False)
    """OpenSearch: the password, as ``${ENV_VAR}``"""
    ca_file: ExistingFile | None = None
    """OpenSearch: certificates to trust instead of the system's"""
    verify_certs: Flag = NodeOptions._field_defaults["verify_certs"]
    """OpenSearch: check the node's certificate"""
    timeout: Seconds = NodeOptions._field_defaults["timeout"]
    """OpenSearch: seconds one request may take"""
    compress: Flag = NodeOptions._field_defaults["compress"]
    """OpenSearch: gzip requests"""

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, raw):
        if not isinstance(raw, dict):
            return raw
        for key in ("path", "table", "url", "name"):  # written as nothing, each would pass for not given
            if key in raw and raw[key] is None:
                raise fail("must be a non-empty string, got nothing", at=f".{key}")
        if "table" in raw and ("path" in raw or "url" in raw):
            raise fail("needs one of 'path' (the embedded index), 'url' (OpenSearch) or 'table'")
        if "table" not in raw and ("path" in raw) == ("url" in raw):
            raise fail("needs either 'path' (the embedded index) or 'url' and 'name' (OpenSearch), "
                       "or 'table' (a Delta table)")
        kind = next(key for key in ("table", "path", "url") if key in raw)
        keys = {"table": _TABLE_KEYS, "path": ("path",)}.get(kind) or set(cls.model_fields) - set(_TABLE_KEYS)
        wrong = sorted(key for key in raw if key in cls.model_fields and key not in keys)
        if wrong:
            raise fail(_NOT_FOR[kind], at=f".{wrong[0]}")
        if kind == "url" and "name" not in raw:
            raise fail("is required with index.url", at=".name")
        return raw

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise fail(f"must start with http:// or https://, got {url!r}")
        return url.rstrip("/")

    @property
    def label(self) -> str:
        return self.path or self.table or f"{self.url} ({self.name})"

    @property
    def kind(self) -> str:
        """The registered index target serving this section (``transforms.index.REGISTRY``)."""
        return "delta" if self.table else "sqlite" if self.path else "opensearch"

    @property
    def node_options(self) -> NodeOptions:
        return NodeOptions(*(getattr(self, key) for key in NodeOptions._fields))


_TABLE_KEYS = ("table", "format", "storage_options")
_NOT_FOR = {"table": "does not apply to a table (with 'table')", "path": "applies only to an OpenSearch index (with 'url')",
            "url": "applies only to a table (with 'table')"}  # a key given beside the kind of index it does not serve


class HttpConfig(Section):
    """Web crawling."""

    user_agent: Text = Limits._field_defaults["user_agent"]
    """the User-Agent header, also the name robots.txt rules are read for"""
    delay: Delay = 1.0
    """seconds between two requests to one host (robots.txt Crawl-delay may ask for more)"""
    concurrency_per_host: Count = Field(2, ge=1)
    """requests in flight to one host"""
    connect_timeout: Seconds = Limits._field_defaults["connect_timeout"]
    """seconds to connect"""
    read_timeout: Seconds = Limits._field_defaults["read_timeout"]
    """seconds between two reads"""
    total_timeout: Seconds = Limits._field_defaults["total_timeout"]
    """seconds for one page, redirects included"""
    max_body: Size = Limits._field_defaults["max_body"]
    """decompressed bytes; a larger page is reported and not indexed"""
    max_redirects: Count = Field(Limits._field_defaults["max_redirects"], ge=0)
    """redirects followed for one URL"""
    max_pages_per_host: Count = Field(100_000, ge=1)
    """pages of one host; a host cut there keeps all its indexed pages"""
    max_cycle_count: Count = Field(3, ge=-1)
    """regain's MaxCycleCount (repeated path segments); -1 switches it off"""
    max_query_strings_per_path: Count = Field(200, ge=1)
    """distinct query strings on one path (calendar traps)"""
    robots_txt: Flag = True
    """obey robots.txt"""
    honour_robots_meta: Flag = True
    """obey <meta name="robots" content="noindex, nofollow">"""
    sitemaps: Flag = True
    """read robots.txt Sitemap: lines and /sitemap.xml"""
    block_private_addresses: Flag = Limits._field_defaults["block_private_addresses"]
    """never fetch private or loopback addresses (set it for public sites)"""


Sid = matching(r"S-1(-\d+)+", "must be a SID such as S-1-5-21-1004336348-1177238915-1001")


class SmbConfig(Section):
    """SMB shares."""

    read_acls: Flag = SourceSettings.smb_read_acls
    """read each file's Windows ACL into its groups"""
    sid_names: Annotated[dict[Sid, Text], OrEmpty] = Field(default_factory=dict)
    """the group name of a SID; others become groups spelled as the SID (S-1-5-21-…-1001)"""


class ImapConfig(Section):
    """Mailboxes."""

    starttls: Flag = SourceSettings.imap_starttls
    """imap:// logs in only after STARTTLS; false: plain text, for trusted networks"""
    ca_file: FileWhenCrawling | None = None
    """certificates to trust instead of the system's"""


class S3Config(Section):
    """S3 buckets and S3-compatible stores (MinIO, Ceph, …); logins from boto3's chain (the environment,
    ~/.aws, an instance role) or a credentials entry for s3://bucket/ (username: access key id)."""

    endpoint_url: Annotated[Text, AfterValidator(lambda url: _http_url(url))] | None = None
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


def _http_url(url: str) -> str:
    if not re.match(r"https?://[^/\s]+", url) or "@" in url.split("://", 1)[1].split("/", 1)[0]:
        raise fail(f"must be an http:// or https:// URL without a login in it, got {url!r}")
    return url.rstrip("/")


class CrawlFile(Section):
    """One crawl: where it starts, what it accepts, where it writes, and its limits."""

    start: Annotated[tuple[StartEntry, ...], Items]
    """the start URLs (at least one)"""
    whitelist: Annotated[tuple[WhitelistEntry, ...], Items] = Field((), json_schema_extra={
        "default_words": "every start URL's prefix"})
    """URLs to crawl; the first matching entry gives the flags. Not given: everything under the starts"""
    blacklist: Annotated[tuple[PatternEntry, ...], Items] = ()
    """URLs never crawled, though whitelisted"""
    index: IndexConfig
    """the index written to"""
    report: Path | None = None
    """the crawl report's path; not given: beside the index (NAME.report.json)"""
    work_dir: Path | None = None
    """the crawl's working folder (a path or URL); not given: beside the index (NAME.work)"""
    url_cleaners: Annotated[tuple[Regex, ...], Items] = ()
    """regexes whose matches are removed from URLs (session ids)"""
    credentials: Annotated[tuple[CredentialEntry, ...], Items] = ()
    """logins by URL prefix"""
    http: Annotated[HttpConfig, OrEmpty] = HttpConfig()
    """web crawling: politeness, timeouts, robots.txt, traps"""
    smb: Annotated[SmbConfig, OrEmpty] = SmbConfig()
    """SMB shares: ACLs and SID names"""
    imap: Annotated[ImapConfig, OrEmpty] = ImapConfig()
    """mailboxes: TLS"""
    s3: Annotated[S3Config, OrEmpty] = S3Config()
    """S3 buckets: endpoint, timeouts, retries, groups"""
    max_depth: Count | None = Field(None, ge=0)
    """folder levels (link hops for the web) below a start URL; nothing: unlimited"""
    max_file_size: Size = 100 * 1024**2
    """larger documents are indexed by metadata only"""
    max_summary_length: Count = Field(250_000, ge=1)
    """characters of a document's summary (regain's MaxSummaryLength)"""
    max_failed_ratio: Ratio = 0.2
    """more failed documents than this share: no deletes, exit 2"""
    max_delete_ratio: Ratio = 0.5
    """deletes would remove more than this share of the index: none run, exit 2"""
    follow_symlinks: Flag = False
    """follow symbolic links in file trees"""
    walk_budget: Count = Field(5_000, ge=1)
    """folder entries one discovery step lists before handing sub-folders on"""
    reprepare: Flag = False
    """prepare every document again in this crawl, changed or not (what `crawl --reprepare` sets)"""
    discovery_rounds: Count = Field(3, ge=1, le=100)
    """rounds unrolled in the graph; the last walks without a budget (100 rounds: a minute and 2 GB to build)"""
    plugins: Annotated[tuple[PluginEntry, ...], Items] = ()
    """plugins, loaded while the configuration is read"""
    auxiliary_fields: Annotated[tuple[AuxFieldEntry, ...], Items] = ()
    """extra index fields from the URL or path; extension and location are always there unless redefined"""
    access_control: Annotated[tuple[AccessEntry, ...], Items] = ()
    """controllers deciding each document's groups, first answer wins; none: the sources' groups stay"""
    preparators: Annotated[tuple[PreparatorEntry, ...], Items] = ()
    """changes to the built-in preparator instances, and new instances"""
    preparation: Annotated[PreparationSection, OrEmpty] = PreparationSection()
    """bounds of every preparator run"""
    ocr: Annotated[OcrSection, OrEmpty] = OcrSection()
    """text recognised in images and scanned PDF pages (tesseract)"""

    @field_validator("start")
    @classmethod
    def _some(cls, start):
        if not start:
            raise fail("needs at least one start URL")
        return start
