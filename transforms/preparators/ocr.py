"""Text recognised in pictures: one page or image at a time through Debian's ``tesseract`` command
(pytesseract drives it), under the ``ocr:`` section's bounds, and cached by content so that it is done once.

A page is OCR'd only if it is within ``max_pixels`` and tesseract answers within ``page_timeout``;
otherwise :class:`Skipped` says why, and the preparator keeps the other pages and reports the skipped ones
(its ``partial``). A machine without tesseract raises :class:`Skipped` with :data:`TESSERACT`'s reason,
which the crawl's summary counts into one warning naming the package (``helpers``); tesseract's path, size
and time belong to the preparation fingerprint, so the first crawl after it is installed OCRs those
documents.

The cache (:class:`Cache`) keeps each page's text under a key of the content's hash, the page and the
settings that change the text (languages, resolution), in the crawl's work folder (``NAME.work/ocr-cache``,
a local folder or any URL Beam's file systems write, so a cluster shares it). A re-preparation (a changed
preparator, a moved file, a rebuilt index) finds the text there. It holds at most ``cache_entries`` pages;
past that the oldest go first.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid

from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.values import TESSERACT_PACKAGE, TESSERACT_PROGRAM, OcrSettings

TESSERACT = Helper(TESSERACT_PROGRAM, TESSERACT_PACKAGE, "images and PDFs with scanned pages")
FIELD = "ocr"  # the field marking a document whose content was (partly) recognised from a scan: "true"
PAGES_FIELD = "ocr_pages"  # how many of its pages or images were OCR'd
DEFAULT = OcrSettings()
_PRUNE_EVERY = 64  # one write in this many (by key) checks the cache's size


class Skipped(Exception):
    """This page or image is not OCR'd; the message is why (a bound, or tesseract missing)."""


def settings_of(params: dict) -> OcrSettings:
    """The OCR settings a preparator was handed (its defaults when called on its own). A part of a container
    (an archive's or a mail's images) is not OCR'd: an archive of hundreds of images would spend the whole
    document's time bound on them and lose the archive's own text (the real-world corpus's help-image ZIPs)."""
    from beamtrawl.transforms.preparators.chain import nesting_depth

    settings = params.get("ocr") or DEFAULT
    return settings._replace(enabled=False) if settings.enabled and nesting_depth() > 0 else settings


def helpers_needed(params: dict) -> tuple[Helper, ...]:
    """The programs a preparator with these parameters needs: tesseract, unless OCR is switched off."""
    return (TESSERACT,) if settings_of(params).enabled else ()


def page_key(content_hash: str, page: int, settings: OcrSettings, resolution: int = 0) -> str:
    """The cache key of one page (or frame) of a document: what it is and the settings that change its text."""
    text = f"{content_hash}:{page}:{'+'.join(settings.languages)}:{resolution}"
    return hashlib.sha256(text.encode()).hexdigest()


class Budget:
    """The OCR time one document may still spend (``document_budget``, set from ``preparation.timeout`` so
    that OCR stops before the preparing process is killed and the text read so far is kept)."""

    def __init__(self, settings: OcrSettings):
        self.ends = time.monotonic() + settings.document_budget if settings.document_budget else None

    def left(self) -> float | None:
        return None if self.ends is None else self.ends - time.monotonic()


def recognise(image, settings: OcrSettings, key: str, budget: Budget | None = None) -> str:
    """The text tesseract reads in ``image`` (a Pillow image), from the cache when it was read before.
    Raises :class:`Skipped` when a bound stops it or tesseract is missing."""
    width, height = image.size
    if width * height > settings.max_pixels:
        raise Skipped(f"{width}×{height} pixels, over ocr.max_pixels ({settings.max_pixels})")
    cache = Cache(settings)
    cached = cache.get(key)
    if cached is not None:
        return cached
    if not TESSERACT.installed():
        raise Skipped(TESSERACT.missing())
    timeout = settings.page_timeout
    left = budget.left() if budget is not None else None
    if left is not None and left < min(timeout, 5.0):
        raise Skipped("not OCR'd: the document's OCR time (near preparation.timeout) is spent")
    text = _tesseract(image, settings, timeout if left is None else min(timeout, left))
    cache.put(key, text)
    return text


def _tesseract(image, settings: OcrSettings, timeout: float) -> str:
    import pytesseract  # loaded on the first picture

    # One thread per page: the crawl's workers are the parallelism. Tesseract's OpenMP threads, on a machine
    # whose cores the workers already use, made a page 4 times slower (bench/ocr_bench.py).
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        text = pytesseract.image_to_string(image, lang="+".join(settings.languages), timeout=timeout)
    except RuntimeError as err:  # pytesseract kills tesseract at the timeout and says so this way
        if "timeout" in str(err).lower():
            raise Skipped(f"OCR took longer than {timeout:g} s (ocr.page_timeout)") from None
        raise Skipped(f"tesseract failed: {' '.join(str(err).split())}"[:200]) from None
    except pytesseract.TesseractNotFoundError:
        raise Skipped(TESSERACT.missing()) from None
    except pytesseract.TesseractError as err:
        raise Skipped(f"tesseract failed: {' '.join(str(err.message).split())}"[:200]) from None
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


class Cache:
    """Recognised text by key, in ``settings.cache`` (nothing when it is ""). Writes go to a new name and are
    renamed into place, so a reader never sees half a page and concurrent workers may write the same key."""

    def __init__(self, settings: OcrSettings):
        self.root = settings.cache.rstrip("/")
        self.limit = settings.cache_entries
        self.remote = "://" in self.root

    def _path(self, key: str) -> str:
        return f"{self.root}/{key[:2]}/{key}.txt"

    def get(self, key: str) -> str | None:
        if not self.root:
            return None
        try:
            if self.remote:
                from apache_beam.io.filesystems import FileSystems

                with FileSystems.open(self._path(key)) as handle:
                    return handle.read().decode("utf-8")
            with open(self._path(key), encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError):
            return None
        except Exception:  # noqa: BLE001 - an object store's "not found" is its own exception; a miss
            return None

    def put(self, key: str, text: str) -> None:
        """Store the text; a cache that cannot be written costs a repeat OCR later, never the document."""
        if not self.root:
            return
        try:
            if self.remote:
                from apache_beam.io.filesystems import FileSystems

                with FileSystems.create(self._path(key)) as handle:
                    handle.write(text.encode("utf-8"))
            else:
                path = self._path(key)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                temporary = f"{path}.{uuid.uuid4().hex[:8]}.part"
                with open(temporary, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(temporary, path)
            if int(key[:8], 16) % _PRUNE_EVERY == 0:
                self.prune()
        except Exception:  # noqa: BLE001 - see above: the text is returned all the same
            return

    def prune(self) -> None:
        """Remove the oldest entries until at most ``cache_entries`` are left."""
        from apache_beam.io.filesystems import FileSystems

        pattern = f"{self.root}/*/*.txt"
        found = [m for result in FileSystems.match([pattern]) for m in result.metadata_list]
        if len(found) <= self.limit:
            return
        found.sort(key=lambda m: m.last_updated_in_seconds)
        FileSystems.delete([m.path for m in found[:len(found) - self.limit]])

