"""Images (PNG, JPEG, TIFF with all its pages, GIF, BMP, WebP) by Pillow: the text tesseract recognises in
them as content (``ocr``), and what a photo says about itself — EXIF, IPTC and XMP title, description,
keywords, author, date taken, camera, GPS position — as fields, and as searchable metadata.

An image narrower or lower than ``ocr.min_image_side`` (an icon, a spacer) is not OCR'd; nor is any with
OCR switched off (``ocr: {enabled: false}``): both keep their metadata. A page over a bound (pixels, time,
pages per document) is skipped with a report line, the others kept. Marked ``ocr: true`` when any text
was recognised, so the search page can say where the text came from; ``ocr_pages`` counts the pages read.
"""

from __future__ import annotations

import hashlib
import io

from beamtrawl.transforms.preparators import ocr
from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("image/png", "image/jpeg", "image/tiff", "image/gif", "image/bmp", "image/x-ms-bmp", "image/webp")
DEFAULTS = (("ocr", ocr.DEFAULT),)
REVISION = 1  # part of the preparation fingerprint (base.py): 1 OCRs images in containers (archives, mails, Office)
helpers_needed = ocr.helpers_needed
_MULTI_PAGE = ("TIFF",)  # formats whose frames are pages; a GIF's or WebP's are an animation: its first is read

# EXIF tags (of the first IFD, then the Exif IFD and the GPS IFD)
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_DESCRIPTION, _MAKE, _MODEL, _DATE, _ARTIST = 270, 271, 272, 306, 315
_XP_TITLE, _XP_AUTHOR, _XP_KEYWORDS, _XP_SUBJECT = 40091, 40093, 40094, 40095
_DATE_ORIGINAL = 36867
# IPTC (record 2) datasets
_IPTC = {(2, 5): "title", (2, 120): "description", (2, 25): "keywords", (2, 80): "author", (2, 55): "date_taken"}
# XMP elements by namespace and name
_DC, _XMP_NS, _PHOTOSHOP, _EXIF_NS = ("http://purl.org/dc/elements/1.1/", "http://ns.adobe.com/xap/1.0/",
                                      "http://ns.adobe.com/photoshop/1.0/", "http://ns.adobe.com/exif/1.0/")
_XMP = {f"{{{_DC}}}title": "title", f"{{{_DC}}}description": "description", f"{{{_DC}}}subject": "keywords",
        f"{{{_DC}}}creator": "author", f"{{{_XMP_NS}}}CreateDate": "date_taken",
        f"{{{_PHOTOSHOP}}}DateCreated": "date_taken", f"{{{_EXIF_NS}}}DateTimeOriginal": "date_taken"}
_RDF_LI = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}li"


def prepare_image(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    from PIL import Image, UnidentifiedImageError

    settings = ocr.settings_of(params)
    try:
        image = Image.open(io.BytesIO(data))
        photo = photo_metadata(image)
    except Image.DecompressionBombError as err:  # a header claiming over 179 million pixels: too large, not broken
        return Prepared(partial=f"not OCR'd: {err}"[:200])
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as err:
        raise PreparationError(f"not readable as an image: {type(err).__name__}: {err}"[:200]) from None
    texts, skipped = _recognised(image, data, settings) if settings.enabled else ([], [])
    fields = {key: value for key, value in photo.items() if key != "title"}
    if texts:
        fields[ocr.PAGES_FIELD] = str(len(texts))
    if any(texts):
        fields[ocr.FIELD] = "true"
    metadata = " ".join(photo[key] for key in ("description", "keywords", "author", "camera", "date_taken")
                        if photo.get(key))
    return Prepared(title=photo.get("title", ""), content="\n".join(text for text in texts if text),
                    metadata=metadata, fields=fields, partial="; ".join(skipped)[:300])


def _recognised(image, data: bytes, settings) -> tuple[list[str], list[str]]:
    """(the text of each page OCR'd, why the others were skipped). Small images are not OCR'd, quietly."""
    from PIL import Image

    content_hash = hashlib.sha256(data).hexdigest()
    pages = getattr(image, "n_frames", 1) if image.format in _MULTI_PAGE else 1
    budget = ocr.allowance(settings)
    texts, skipped = [], []
    for page in range(pages):
        try:
            if pages > 1:
                image.seek(page)
            if min(image.size) < settings.min_image_side:
                continue
            if not budget.take_pages(1):
                skipped.append(f"pages {page + 1}-{pages} not OCR'd: {ocr.over_pages(settings)}" if pages > 1
                               else f"not OCR'd: {ocr.over_pages(settings)}")
                break
            if image.size[0] * image.size[1] > settings.max_pixels:
                raise ocr.Skipped(f"{image.size[0]}×{image.size[1]} pixels, over ocr.max_pixels "
                                  f"({settings.max_pixels})")
            frame = image.convert("RGB") if image.mode not in ("RGB", "L", "1") else image.copy()
            texts.append(ocr.recognise(frame, settings, ocr.page_key(content_hash, page, settings), budget))
        except ocr.Skipped as err:
            skipped.append(f"page {page + 1}: {err}" if pages > 1 else str(err))
        except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError) as err:
            skipped.append(f"page {page + 1}: not decodable: {type(err).__name__}: {err}"[:200])
    budget.read(texts, skipped)
    return texts, skipped


def photo_metadata(image) -> dict[str, str]:
    """What the image says about itself: title, description, keywords, author, date_taken, camera, gps.
    EXIF first, then IPTC, then XMP fill what is still missing."""
    found: dict[str, str] = {}
    for source in (_exif, _iptc, _xmp):
        try:
            values = source(image)
        except Exception:  # noqa: BLE001, S112 - a damaged metadata block costs that block only
            continue
        for key, value in values.items():
            value = " ".join(str(value).replace("\x00", " ").split())
            if value and key not in found:
                found[key] = value[:1000]
    return found


def _exif(image) -> dict[str, str]:
    exif = image.getexif()
    values = {"title": _xp(exif.get(_XP_TITLE)), "description": exif.get(_DESCRIPTION) or _xp(exif.get(_XP_SUBJECT)),
              "author": exif.get(_ARTIST) or _xp(exif.get(_XP_AUTHOR)),
              "keywords": _xp(exif.get(_XP_KEYWORDS)).replace(";", ", "),
              "date_taken": exif.get_ifd(_EXIF_IFD).get(_DATE_ORIGINAL) or exif.get(_DATE),
              "camera": " ".join(str(exif.get(tag) or "").strip() for tag in (_MAKE, _MODEL)).strip()}
    gps = _gps(exif.get_ifd(_GPS_IFD))
    if gps:
        values["gps"] = gps
    return {key: value for key, value in values.items() if value}


def _xp(value) -> str:
    """Windows' XP* tags: UTF-16LE bytes (Pillow may hand them as a tuple of ints)."""
    if not value:
        return ""
    raw = bytes(value) if not isinstance(value, (bytes, str)) else value
    return raw if isinstance(raw, str) else raw.decode("utf-16-le", "replace").rstrip("\x00")


def _gps(ifd) -> str:
    """"latitude,longitude" in decimal degrees, or "" when the GPS IFD has no position."""
    try:
        lat, lon = _degrees(ifd[2], ifd.get(1, "N")), _degrees(ifd[4], ifd.get(3, "E"))
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return ""
    return f"{lat:.6f},{lon:.6f}"


def _degrees(value, ref) -> float:
    degrees, minutes, seconds = (float(part) for part in value)
    sign = -1 if str(ref).strip().upper() in ("S", "W") else 1
    return sign * (degrees + minutes / 60 + seconds / 3600)


def _iptc(image) -> dict[str, str]:
    from PIL import IptcImagePlugin

    info = IptcImagePlugin.getiptcinfo(image) or {}
    values = {}
    for dataset, key in _IPTC.items():
        value = info.get(dataset)
        if value:
            parts = value if isinstance(value, list) else [value]
            values[key] = ", ".join(part.decode("utf-8", "replace") for part in parts)
    return values


def _xmp(image) -> dict[str, str]:
    from defusedxml import ElementTree

    packet = (image.info.get("xmp") or image.info.get("XML:com.adobe.xmp")
              or (getattr(image, "tag_v2", {}) or {}).get(700))
    if not packet:
        return {}
    if isinstance(packet, str):
        packet = packet.encode("utf-8")
    root = ElementTree.fromstring(bytes(packet).strip(b"\x00 \n"))
    values: dict[str, list[str]] = {}
    for element in root.iter():
        for name, value in element.attrib.items():  # <rdf:Description xmp:CreateDate="…">
            if name in _XMP:
                values.setdefault(_XMP[name], []).append(value)
        if element.tag in _XMP:
            items = [li.text for li in element.iter(_RDF_LI) if li.text] or [element.text or ""]
            values.setdefault(_XMP[element.tag], []).extend(items)
    return {key: ", ".join(item.strip() for item in items if item.strip()) for key, items in values.items()}
