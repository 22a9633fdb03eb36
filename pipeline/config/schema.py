"""The crawl file's schema: every section, every key, its type and its default, each written once here
(or in the value type a section builds, which the section then names). The reference in
docs/configuration-reference.md is generated from these models (:mod:`pipeline.config.reference`)."""

from __future__ import annotations

import difflib
import functools
import re
from typing import Annotated, Any, Literal

from beamtrawl.pipeline.config.access import AccessEntry
from beamtrawl.pipeline.config.auxfields import AuxFieldEntry
from beamtrawl.pipeline.config.ocr import OcrSection
from beamtrawl.pipeline.config.plugins import PluginEntry
from beamtrawl.pipeline.config.preparators import PreparationSection, PreparatorEntry
from beamtrawl.pipeline.config.work_folder import beam_folder
from beamtrawl.transforms.fields import (
    Count,
    Flag,
    Items,
    OrEmpty,
    Path,
    Problem,
    Ratio,
    Regex,
    Section,
    Size,
    Text,
    Url,
    context,
    exactly_one,
    explain,
    fail,
)
from beamtrawl.transforms.fields import kind as kind_of
from beamtrawl.transforms.sources import (
    RegistryError,
    builtin,
    known,
    local_path,
    schemes,
    section_source,
    settings_sources,
    source_for,
    start_problem,
)
from beamtrawl.transforms.sources.settings import section_name
from beamtrawl.transforms.urls import holds_login, normalize_url
from beamtrawl.transforms.values import Credential, StartUrl, UrlPattern
from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    field_validator,
)

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
_PATH_HINT = "(a relative path with ':' in its first folder is written ./folder)"


def _work_folder(folder: str) -> str:
    """The work folder is written through Beam's file systems: a path, ``s3://``, ``gs://``, or a folder in Azure
    (``az://``, ``abfs(s)://``), which becomes Beam's ``azfs://account/container/…`` (pipeline/config/work_folder.py)."""
    if "://" in folder and not re.match(r"(file:///|(s3|gs|az|abfss?)://[^/\s])", folder):
        raise fail(f"must be a folder, file:///…, s3://bucket/…, gs://bucket/… or az://container/… (abfss:// "
                   f"alike), got {folder!r}")
    try:
        return beam_folder(folder)
    except ValueError as err:
        raise fail(str(err)) from None  # not the URL: it may hold a login


class StartEntry(Section):
    """A start URL (a plain path is a folder or file relative to the configuration file)."""

    url: Url
    """where the crawl starts: file, http(s), smb, imap(s), s3, gs or az (abfs, abfss) URL, or a path"""
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
        if written and not text[written.end():].startswith("//") and local_path(text) is None:
            scheme = written.group(1).lower()  # "http:/host" is a typo, not a folder named "http:"; file:/x is a URL
            raise fail(f"{scheme}: URLs are written {scheme}://host/… {_PATH_HINT}")
        if holds_login(text):  # any scheme: the URL is indexed
            raise fail("must not hold a user or password; put the login in credentials")
        return url

    @field_validator("url")
    @classmethod
    def _supported(cls, url: str, info: ValidationInfo) -> str:
        if context(info)["crawling"]:  # a source loads now, not on a worker mid-crawl; a search needs none
            try:
                source_for(url)
            except RegistryError as err:
                raise fail(str(err)) from None
            problem = start_problem(url)
            if problem:
                raise fail(problem)
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
        if "://" not in url or holds_login(url):
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


#: The kind of an ``index`` section without ``kind``, guessed from the key that names it, as before ``kind`` was.
_GUESSED_KIND = {"table": "delta", "path": "sqlite", "url": "opensearch", "name": "opensearch"}
_KIND_NEEDED = ("needs 'kind' (one of {kinds}), or 'path' (the embedded index), 'url' and 'name' (OpenSearch) "
                "or 'table' (a Delta table)")


def _targets():
    """The index targets' registry, imported when an ``index`` section is checked (its built-in, the embedded
    index, costs a configuration's import 0.1 s otherwise)."""
    from beamtrawl.transforms import index

    return index


def _guessed_kind(raw: dict) -> str:
    """The kind a section without ``kind`` was always read as (a file written before ``kind`` keeps loading)."""
    for key in _GUESSED_KIND:  # written as nothing, each would pass for not given
        if key in raw and raw[key] is None:
            raise fail("must be a non-empty string, got nothing", at=f".{key}")
    kinds = {kind for key, kind in _GUESSED_KIND.items() if key in raw and key != "name"} or \
        {kind for key, kind in _GUESSED_KIND.items() if key in raw}  # a name beside a table is the table's mistake
    if len(kinds) != 1:
        raise fail(_KIND_NEEDED.format(kinds=", ".join(_targets().REGISTRY.names())))
    return kinds.pop()


def index_section(raw: Any, info: ValidationInfo) -> Any:
    """The ``index`` section, checked by the model of its kind's target (``kind``, else guessed): a
    :class:`~beamtrawl.transforms.index.base.TargetSettings`."""
    targets = _targets()
    if isinstance(raw, targets.TargetSettings):
        return raw
    if not isinstance(raw, dict):
        raise fail(f"must be a mapping, got {kind_of(raw)}")
    name = raw["kind"] if "kind" in raw else _guessed_kind(raw)
    if not isinstance(name, str) or not targets.REGISTRY.known(name) and not targets.REGISTRY.skipped(name):
        near = difflib.get_close_matches(str(name).lower(), targets.REGISTRY.names(), n=1)
        raise fail(f"must be one of {', '.join(targets.REGISTRY.names())}, got {name!r}"
                   + (f" (did you mean {near[0]}?)" if near else ""), at=".kind")
    try:
        model = targets.settings_model(name)
    except RegistryError as err:
        raise fail(str(err), at=".kind") from None
    try:
        return model.model_validate({**raw, "kind": name}, context=info.context)
    except ValidationError as err:
        key, problem = explain(err.errors(include_url=False)[0])
        raise fail(problem, at=key) from None


def embeddings_section(raw: Any, info: ValidationInfo) -> Any:
    """The ``embeddings`` section: nothing or ``false`` (off), or ``model`` and that model's own keys, checked by
    the model's ``Settings`` (transforms/embed): an :class:`~beamtrawl.transforms.embed.EmbeddingSettings`."""
    from beamtrawl.transforms import embed

    if raw is None or raw is False or isinstance(raw, embed.EmbeddingSettings):
        return raw or None
    if not isinstance(raw, dict):
        raise fail(f"must be a mapping with a model (e.g. {{model: wordllama}}) or false, got {kind_of(raw)}")
    name = raw.get("model")
    if not isinstance(name, str) or not embed.REGISTRY.known(name) and not embed.REGISTRY.skipped(name):
        raise fail(f"must be one of {', '.join(embed.REGISTRY.names())}, got {name!r}", at=".model")
    try:
        model = embed.settings_model(name)
    except RegistryError as err:
        raise fail(str(err), at=".model") from None
    try:
        return model.model_validate(raw, context=info.context)
    except ValidationError as err:
        key, problem = explain(err.errors(include_url=False)[0])
        raise fail(problem, at=key) from None


class CrawlFile(Section):
    """One crawl: where it starts, what it accepts, where it writes, and its limits."""

    start: Annotated[tuple[StartEntry, ...], Items]
    """the start URLs (at least one)"""
    whitelist: Annotated[tuple[WhitelistEntry, ...], Items] = Field((), json_schema_extra={
        "default_words": "every start URL's prefix"})
    """URLs to crawl; the first matching entry gives the flags. Not given: everything under the starts"""
    blacklist: Annotated[tuple[PatternEntry, ...], Items] = ()
    """URLs never crawled, though whitelisted"""
    index: Annotated[Any, PlainValidator(index_section),
                     WithJsonSchema({"type": "object", "description": "the kind's own keys: see `index` (kind: …)"})]
    """the index written to: ``kind`` and the kind's own keys"""
    report: Path | None = None
    """the crawl report's path; not given: beside the index (NAME.report.json)"""
    work_dir: Annotated[Path, AfterValidator(_work_folder)] | None = None
    """the crawl's working folder: a path every worker reaches, or a bucket (s3://bucket/work/, gs://bucket/work/,
    az://container/work/) so that a cluster needs no shared disk; not given: beside the index (NAME.work)"""
    url_cleaners: Annotated[tuple[Regex, ...], Items] = ()
    """regexes whose matches are removed from URLs (session ids)"""
    credentials: Annotated[tuple[CredentialEntry, ...], Items] = ()
    """logins by URL prefix"""
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
    embeddings: Annotated[Any, PlainValidator(embeddings_section), WithJsonSchema(
        {"type": "object", "default_words": "off", "description": "``model`` and the model's own keys, or false"})] = None
    """passages embedded for questions and semantic search: ``{model: wordllama}`` and the model's keys; nothing
    or false: off (docs/search.md, "Questions")"""

    @classmethod
    def other_keys(cls) -> set[str]:
        return set(settings_sources())  # only when a key is unknown: this imports every source

    @field_validator("start")
    @classmethod
    def _some(cls, start):
        if not start:
            raise fail("needs at least one start URL")
        return start


def _source_field(model: type) -> tuple:
    """A source's section as a field of the file: written as nothing or left out, it has its defaults."""
    about = " ".join((model.__doc__ or "").split()).split("; ")[0]  # its first line, as a table row says it
    return Annotated[model, OrEmpty], Field(default_factory=dict, validate_default=True, description=about)


def sections_named(raw: Any, crawling: bool = True) -> frozenset[str]:
    """The top-level keys of ``raw`` that are sources' sections (``smb``, ``http``, an extension's) and, for a
    crawl, the sections of the start URLs' sources from other distributions, given or not (so a key their model
    requires is asked for now, not on a worker); raises Problem when the source a key names cannot be loaded."""
    names = set()
    for key in raw if isinstance(raw, dict) else ():
        if key not in CrawlFile.model_fields:
            try:
                if section_source(key) is not None:
                    names.add(key)
            except RegistryError as err:
                raise Problem(str(key), str(err)) from None
    return frozenset(names | (_extension_sections(raw) if crawling else set()))


def _extension_sections(raw: Any) -> set[str]:
    """The sections of the sources of ``raw``'s start URLs that another distribution registers."""
    starts = raw.get("start") if isinstance(raw, dict) else None
    names = set()
    for entry in starts if isinstance(starts, list) else ():
        url = entry.get("url") if isinstance(entry, dict) else None
        written = _SCHEME.match(url.strip()) if isinstance(url, str) else None
        if written and not builtin(written.group(1).lower()):
            try:
                source = source_for(written.group(0))
            except RegistryError:
                continue  # the start URL's own check says so, at its key
            if getattr(source, "Settings", None) is not None:
                names.add(section_name(source))
    return names


@functools.cache
def crawl_file(names: frozenset[str]) -> type[CrawlFile]:
    """The file's model with the sections ``names`` of the sources' settings (every other key of the file is
    the schema's own); only the sources a file names are imported."""
    if not names:
        return CrawlFile
    fields = {name: _source_field(section_source(name).Settings) for name in sorted(names)}
    return create_model("CrawlFile", __base__=CrawlFile, __doc__=CrawlFile.__doc__, **fields)
