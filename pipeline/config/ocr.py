"""The ``ocr:`` section: text recognised in images and in PDF pages without a text layer.

::

    ocr: {enabled: true, languages: [eng, deu], min_image_side: 64, page_timeout: 60, max_pages: 100,
          max_pixels: 60000000, dpi: 300, cache_entries: 100000}

The languages are checked while the file is read against the packs tesseract has installed, and one it
lacks is a one-line error naming the Debian package to install. Without tesseract at all nothing is refused:
the crawl runs, and its summary has one warning naming ``tesseract-ocr`` and the documents prepared without it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from beamtrawl.transforms.fields import Count, Flag, Items, Seconds, Section, context, fail, matching
from beamtrawl.transforms.values import OcrSettings, language_package, tesseract_packs
from pydantic import Field, ValidationInfo, field_validator

_DEFAULT = OcrSettings._field_defaults  # the defaults are written once, in OcrSettings
CACHE_FOLDER = "ocr-cache"  # in the crawl's work folder, kept from crawl to crawl
Language = matching(r"[A-Za-z_]+", "must be a tesseract language such as eng or deu, got {value!r}")
#: Packs tesseract lists that are no language: as one, ``osd`` (orientation and script detection) read an English
#: page as "неио dea mrraen".
NOT_LANGUAGES = {"osd": "orientation and script detection", "equ": "equation detection"}


def installed_languages() -> frozenset[str] | None:
    """The language packs tesseract reads; None without tesseract."""
    found = tesseract_packs()
    return None if found is None else found[1]


class OcrSection(Section):
    """Text in pictures: images and PDF pages without a text layer, by tesseract."""

    enabled: Flag = _DEFAULT["enabled"]
    """false: no OCR (images are indexed by their metadata, scanned pages give no text)"""
    languages: Annotated[tuple[Language, ...], Items] = _DEFAULT["languages"]
    """tesseract language packs (Debian: tesseract-ocr-LANG), e.g. [eng, deu]"""
    min_image_side: Count = Field(_DEFAULT["min_image_side"], ge=1)
    """pixels; images narrower or lower (icons, spacers) are not OCR'd"""
    page_timeout: Seconds = _DEFAULT["page_timeout"]
    """seconds for one page or image; one taking longer is skipped with a report line"""
    max_pages: Count = Field(_DEFAULT["max_pages"], ge=1)
    """pages OCR'd per document, the pictures in its parts (archive members, attachments, Office media) included; the rest are skipped with a report line"""
    max_pixels: Count = Field(_DEFAULT["max_pixels"], ge=1)
    """pixels of one page or image; a larger one is skipped with a report line"""
    dpi: Count = Field(_DEFAULT["dpi"], ge=50, le=1200)
    """resolution PDF pages are rendered at for OCR"""
    cache_entries: Count = Field(_DEFAULT["cache_entries"], ge=0)
    """pages and images whose text the cache (in the work folder) keeps; 0: no cache"""

    @field_validator("languages")
    @classmethod
    def _installed(cls, languages: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if not languages:
            raise fail("needs at least one language, e.g. [eng]")
        found = installed_languages() if context(info)["crawling"] else None  # a search OCRs nothing
        for i, language in enumerate(languages):
            if language in NOT_LANGUAGES:
                raise fail(f"{language!r} is tesseract's {NOT_LANGUAGES[language]}, not a language: its text would be "
                           "garbage; name languages such as eng or deu", at=f"[{i}]")
            if found is not None and language not in found:
                raise fail(f"tesseract has no language pack {language!r} (install the Debian package "
                           f"{language_package(language)}; installed: {', '.join(sorted(found - set(NOT_LANGUAGES))) or 'none'})",
                           at=f"[{i}]")
        return languages

    def settings(self, work_dir: str, preparation_timeout: float) -> OcrSettings:
        """The settings the preparators get: the cache in the work folder, and OCR time per document a little
        under the preparation's bound, so OCR stops and keeps its text before the preparing process is killed."""
        cache_dir = f"{work_dir.rstrip('/')}/{CACHE_FOLDER}" if self.cache_entries else ""
        values = {key: getattr(self, key) for key in OcrSettings._fields if key in type(self).model_fields}
        return OcrSettings(**values, cache=cache_dir, document_budget=preparation_timeout * 0.8)


def with_ocr(preparators: tuple, settings: OcrSettings) -> tuple:
    """The preparator instances with the crawl's OCR settings as their ``ocr`` parameter, where they take one."""
    return tuple(replace(spec, params=tuple((key, settings if key == "ocr" else value) for key, value in spec.params))
                 if any(key == "ocr" for key, _ in spec.params) else spec for spec in preparators)
