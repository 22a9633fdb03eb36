"""Text recognised in pictures: one page or image at a time by tesseract's library through its API
(tesserocr), with the language packs of Debian's ``tesseract-ocr``, under the ``ocr:`` section's bounds, and
cached by content so that it is done once.

The API, not the command: a preparing process loads a language's model once and keeps it for every page it
reads, where the command loaded it for each page and was handed each page as a file (tesserocr's engine read a
page in 0.83 of the command's CPU time: ``bench/ocr_bench.py``). Debian's ``tesseract-ocr`` package is what is
"installed" or not: its packs are the models, and its program says where they are (``--list-langs``).

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
import threading
import time
import uuid

from beamtrawl.transforms.preparators.chain import document_shared, nesting_depth, when_prepared
from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.values import (
    TESSERACT_PACKAGE,
    TESSERACT_PROGRAM,
    OcrSettings,
    language_package,
    tesseract_packs,
)

TESSERACT = Helper(TESSERACT_PROGRAM, TESSERACT_PACKAGE, "images and PDFs with scanned pages")
FIELD = "ocr"  # the field marking a document whose content was (partly) recognised from a scan: "true"
PAGES_FIELD = "ocr_pages"  # how many of its pages or images were OCR'd
DEFAULT = OcrSettings()
_PRUNE_EVERY = 64  # one write in this many (by key) checks the cache's size
MIN_SKEW, MAX_SKEW = 3, 15  # degrees of a page's skew: below, tesseract copes; past, it is no skew but a layout
_SKEW_SIDE = 500  # pixels of the longer side of the copy the skew is measured on
_SKEW_GAIN = 1.5  # how much more uneven the turned rows must be than the rows as they are
_ENGINES = threading.local()  # each thread's engines (:func:`_engine`)
PARTS_SHARE = 0.5  # of a document's OCR time (document_budget), what the pictures in its parts may spend


class Skipped(Exception):
    """This page or image is not OCR'd; the message is why (a bound, or tesseract missing)."""


def settings_of(params: dict) -> OcrSettings:
    """The OCR settings a preparator was handed (its defaults when called on its own)."""
    return params.get("ocr") or DEFAULT


def helpers_needed(params: dict) -> tuple[Helper, ...]:
    """The programs a preparator with these parameters needs: tesseract, unless OCR is switched off."""
    return (TESSERACT,) if settings_of(params).enabled else ()


def page_key(content_hash: str, page: int, settings: OcrSettings, resolution: int = 0) -> str:
    """The cache key of one page (or frame) of a document: what it is and the settings that change its text."""
    text = f"{content_hash}:{page}:{'+'.join(settings.languages)}:{resolution}"
    return hashlib.sha256(text.encode()).hexdigest()


class Allowance:
    """The OCR one document may still spend, shared by the document and all its parts (an archive's images,
    a DOCX's pictures, a mail's attachments, a PDF's attached files): time, ``document_budget`` (set from
    ``preparation.timeout``, so that OCR stops and keeps the text read so far before the preparing process is
    killed), and pages, ``max_pages``. Parts may spend only :data:`PARTS_SHARE` of the time, from when the
    document's preparation began: the container's own text and its other members need the rest (an archive
    of hundreds of help images once spent the whole bound on them and lost its own text)."""

    def __init__(self, settings: OcrSettings, started: float):
        self.started, self.seconds, self.pages = started, settings.document_budget, settings.max_pages
        self.in_parts, self.text_in_parts = 0, False  # pages the parts OCR'd; whether any gave text
        self.skipped_in_parts: list[str] = []  # why pages of the parts were not OCR'd

    def left(self) -> float | None:
        """Seconds of OCR still allowed here (None: no bound)."""
        if not self.seconds:
            return None
        share = PARTS_SHARE if nesting_depth() > 0 else 1.0
        return self.started + self.seconds * share - time.monotonic()

    def read(self, texts: list[str], skipped: list[str]) -> None:
        """Count the pages a part OCR'd (their texts) and those it skipped (why), which the container's document
        reports (:meth:`mark`)."""
        if nesting_depth() > 0:
            self.in_parts += len(texts)
            self.text_in_parts = self.text_in_parts or any(texts)
            self.skipped_in_parts.extend(skipped)

    def mark(self, prepared) -> None:
        """The container's document counts its parts' OCR'd pages (``ocr_pages``, the report's count), is
        marked ``ocr: true`` when they gave text, and has a report line for the pages skipped (a bound reached,
        tesseract missing), whichever preparator read it (an archive, a mail)."""
        if self.skipped_in_parts:
            line = f"pictures in its parts not OCR'd: {len(self.skipped_in_parts)} ({self.skipped_in_parts[0]})"
            prepared.partial = "; ".join(filter(None, (prepared.partial, line)))[:300]
        if not self.in_parts:
            return
        own = int(prepared.fields.get(PAGES_FIELD) or 0)
        prepared.fields = {**prepared.fields, PAGES_FIELD: str(own + self.in_parts)}
        if self.text_in_parts:
            prepared.fields[FIELD] = "true"

    def take_pages(self, wanted: int) -> int:
        """How many of ``wanted`` pages may still be OCR'd (and are counted as OCR'd from now)."""
        granted = max(0, min(wanted, self.pages))
        self.pages -= granted
        return granted


def allowance(settings: OcrSettings) -> Allowance:
    """The allowance of the document being prepared, made by the first of its preparators (its own or a
    part's) to OCR; one per preparator call outside a crawl's chain."""
    shared = document_shared()
    if "ocr" not in shared:
        shared["ocr"] = Allowance(settings, shared["started"])
        when_prepared(shared["ocr"].mark)
    return shared["ocr"]


def over_pages(settings: OcrSettings) -> str:
    """Why a page past the document's page allowance is not OCR'd."""
    return f"over ocr.max_pages ({settings.max_pages})"


def recognise(image, settings: OcrSettings, key: str, budget: Allowance | None = None) -> str:
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
    text = _tesseract(straightened(image), settings, timeout if left is None else min(timeout, left))
    cache.put(key, text)
    return text


def _row_spread(ink, angle: float) -> float:
    """How unevenly the ink falls on the rows of ``ink`` turned by ``angle``: lines of text lying level make
    rows of ink and rows of paper, the most uneven profile."""
    from PIL import Image

    rows = ink.rotate(angle, resample=Image.NEAREST).resize((1, ink.height), Image.BOX).histogram()
    count = sum(rows)
    mean = sum(value * n for value, n in enumerate(rows)) / count
    return sum(n * (value - mean) ** 2 for value, n in enumerate(rows)) / count


def skew(image) -> float:
    """The angle (degrees, counter-clockwise) that lays the text of ``image`` level, within ±MAX_SKEW: the
    turn whose row profile of a small copy is most uneven (a projection profile), to a quarter degree; 0 when
    no turn makes it clearly more uneven than none (a page of columns, a picture, text turned by 90°)."""
    grey = image if image.mode == "L" else image.convert("L")
    factor = -(-max(grey.size) // _SKEW_SIDE)
    ink = (grey.reduce(factor) if factor > 1 else grey).point(lambda value: 255 if value < 160 else 0)
    coarse = max(range(-MAX_SKEW, MAX_SKEW + 1), key=lambda angle: _row_spread(ink, angle))
    best = max((coarse + step / 4 for step in range(-4, 5)), key=lambda angle: _row_spread(ink, angle))
    return best if _row_spread(ink, best) >= _SKEW_GAIN * _row_spread(ink, 0) else 0.0


def straightened(image):
    """``image`` turned level when its text lies askew by MIN_SKEW or more: tesseract reads a page turned by a
    degree or two (a scan) as it is, but next to nothing of one turned by 10° (Tika's testRotated±10.png)."""
    from PIL import Image

    angle = skew(image)
    if abs(angle) < MIN_SKEW:
        return image
    white = 255 if image.mode in ("L", "1") else (255,) * len(image.getbands())
    return image.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=white)


def _tesseract(image, settings: OcrSettings, timeout: float) -> str:
    engine = _engine("+".join(settings.languages))
    try:
        engine.SetImage(image)  # the callers hand RGB, L or 1; an empty or odd image is no page to read
    except (OSError, ValueError) as err:
        raise Skipped(f"not a picture tesseract reads: {err}"[:200]) from None
    if not engine.Recognize(timeout=max(1, int(timeout * 1000))):
        engine.Clear()
        raise Skipped(f"OCR took longer than {timeout:g} s (ocr.page_timeout)")
    text = engine.GetUTF8Text()
    engine.Clear()
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _engine(languages: str):
    """This thread's engine for ``languages`` (eng+deu), its models loaded once and kept for every page (an
    engine reads one page at a time)."""
    engines = _ENGINES.__dict__.setdefault("by_languages", {})
    if languages not in engines:
        engines[languages] = _new_engine(languages)
    return engines[languages]


def _new_engine(languages: str):
    # One thread per page: the crawl's workers are the parallelism. Tesseract's OpenMP threads, on a machine
    # whose cores the workers already use, made a page 4 times slower (bench/ocr_bench.py).
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        import tesserocr  # loaded on the first picture
    except ImportError:  # no wheel for this platform (pyproject.toml)
        raise Skipped("tesseract's API is not installed (the Python package tesserocr)") from None
    found = tesseract_packs()
    if found is None:
        raise Skipped(TESSERACT.missing())
    try:
        return tesserocr.PyTessBaseAPI(path=found[0].rstrip("/") + "/", lang=languages)
    except RuntimeError as err:
        missing = [language for language in languages.split("+") if language not in found[1]]
        if missing:  # checked with the configuration, but this machine (a worker) lacks it: tesseract says "tessdata"
            raise Skipped(f"tesseract has no language pack {missing[0]!r} here (install the Debian package "
                          f"{language_package(missing[0])})") from None
        raise Skipped(f"tesseract failed: {' '.join(str(err).split())}"[:200]) from None


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

