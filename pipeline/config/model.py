"""What the crawl reads: :class:`Config`, built from a checked :class:`~pipeline.config.schema.CrawlFile`.

The schema says what a file may hold; :func:`build` turns its entries into the values stages use
(start URLs, URL patterns, logins, preparator instances, plugin specs, controllers) and fills in what
depends on other keys (the whitelist from the starts, the report and work folder beside the index)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beamtrawl.pipeline.config.access import controllers
from beamtrawl.pipeline.config.auxfields import aux_field_specs
from beamtrawl.pipeline.config.ocr import with_ocr
from beamtrawl.pipeline.config.plugins import plugin_specs
from beamtrawl.pipeline.config.preparators import preparator_specs
from beamtrawl.pipeline.config.schema import CrawlFile
from beamtrawl.plugins.manager import PluginSpec
from beamtrawl.transforms.enrich.auxfields import AuxFieldSpec
from beamtrawl.transforms.fields import Problem
from beamtrawl.transforms.sources import section_source
from beamtrawl.transforms.values import Bounds, Credential, OcrSettings, StartUrl, UrlPattern

if TYPE_CHECKING:
    from beamtrawl.transforms.embed import EmbeddingSettings
    from beamtrawl.transforms.index.base import TargetSettings
    from beamtrawl.transforms.preparators import PreparatorSpec


@dataclass(frozen=True)
class Config:
    """One crawl's configuration, as every stage reads it (defaults: :class:`CrawlFile`)."""

    source: str  # the file it was read from
    start: tuple[StartUrl, ...]
    whitelist: tuple[UrlPattern, ...]
    blacklist: tuple[UrlPattern, ...]
    index: TargetSettings  # the kind's own model (transforms/index: its target's Settings)
    report: str
    work_dir: str
    url_cleaners: tuple[re.Pattern, ...]
    credentials: tuple[Credential, ...]
    sections: tuple[tuple[str, Any], ...]  # the sources' sections the file changes: name → the source's Settings
    max_depth: int | None
    max_file_size: int
    max_summary_length: int
    max_failed_ratio: float
    max_delete_ratio: float
    follow_symlinks: bool
    walk_budget: int
    discovery_rounds: int
    reprepare: bool
    plugins: tuple[PluginSpec, ...]  # in configuration order
    auxiliary_fields: tuple[AuxFieldSpec, ...]
    access_control: tuple  # controllers (transforms.enrich.access); none: the sources' groups stay
    preparators: tuple[PreparatorSpec, ...]  # none when searching (crawling=False): a search prepares nothing
    preparation: Bounds
    ocr: OcrSettings  # also the ``ocr`` parameter of the preparators that OCR (image, pdf)
    embeddings: EmbeddingSettings | None = None  # the model passages are embedded by; None: off (transforms/embed)

    def section(self, name: str) -> Any:
        """The source section ``name`` as the file gave it, else its defaults (None: no source has a section
        ``name``). Sources read theirs through :class:`~beamtrawl.transforms.sources.settings.SourceSettings`."""
        given = dict(self.sections).get(name)
        source = given is None and section_source(name)
        return source.Settings() if source else given


#: The top-level limits and switches with their defaults, read from the schema (the report and work folder
#: default to places beside the index, found in :func:`build`).
DEFAULTS = {name: field.default for name, field in CrawlFile.model_fields.items()
            if name not in ("report", "work_dir", "embeddings") and (field.default is None or isinstance(field.default, (int, float)))}


def _changed_sections(file: CrawlFile) -> tuple:
    """The sources' sections the file gives other values than their defaults (``http: {}`` changes nothing)."""
    given = ((name, getattr(file, name)) for name in type(file).model_fields if name not in CrawlFile.model_fields)
    return tuple((name, value) for name, value in given if value != type(value)())


def build(file: CrawlFile, source: str, crawling: bool = True) -> Config:
    """The crawl's configuration from the checked file ``source``; raises :class:`Problem` for what only
    the whole file can tell (a start URL no whitelist entry accepts) or the registries know. Searching
    (``crawling=False``) loads no plugin and builds no preparator instance."""
    start = tuple(entry.value() for entry in file.start)
    if "whitelist" in file.model_fields_set:
        whitelist = tuple(entry.value(f"whitelist[{i}]") for i, entry in enumerate(file.whitelist))
    else:  # no whitelist: everything under the start URLs
        whitelist = tuple(UrlPattern(prefix=s.url) for s in start)
    for i, s in enumerate(start):
        if not any(p.matches(s.url) or p.matches(s.url.rstrip("/") + "/") for p in whitelist):
            raise Problem(f"start[{i}].url", f"{s.url} is matched by no whitelist entry, so nothing under it "
                                             "would be crawled")
    index = file.index
    base = os.path.dirname(os.path.abspath(source))
    stem = index.stem(base)
    settings = {key: getattr(file, key) for key in DEFAULTS}
    work_dir = file.work_dir or stem + ".work"
    ocr = file.ocr.settings(work_dir, file.preparation.timeout)
    return Config(
        source=source, start=start, whitelist=whitelist,
        blacklist=tuple(entry.value(f"blacklist[{i}]") for i, entry in enumerate(file.blacklist)),
        credentials=tuple(entry.value(f"credentials[{i}]") for i, entry in enumerate(file.credentials)),
        index=index, report=file.report or stem + ".report.json", work_dir=work_dir,
        url_cleaners=file.url_cleaners,
        sections=_changed_sections(file),
        plugins=plugin_specs(file.plugins, load=crawling),
        auxiliary_fields=aux_field_specs(file.auxiliary_fields), access_control=controllers(file.access_control),
        preparators=with_ocr(preparator_specs(file.preparators), ocr) if crawling else (),
        preparation=file.preparation.bounds(), ocr=ocr, embeddings=file.embeddings, **settings)

