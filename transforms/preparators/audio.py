"""Audio tags by mutagen (pure Python): MP3 (ID3v2, ID3v1), MP4/M4A, Ogg Vorbis/Opus and FLAC. The
content is "artist, album, title, year, length, <bitrate>kbps" as regain's MP3Preparator made it
(missing parts skipped; length as [hh:]mm:ss), the title "<artist> - <title>", and genre and comment
the metadata. A file without tags still gives its length and bitrate where mutagen can read them."""

from __future__ import annotations

import io
import re

import mutagen
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from mutagen.flac import FLAC
from mutagen.mp3 import MP3
from mutagen.mp4 import MP4
from mutagen.oggopus import OggOpus
from mutagen.oggvorbis import OggVorbis

MIME_TYPES = ("audio/mpeg", "audio/mp3", "audio/x-m4a", "audio/mp4", "audio/ogg", "application/ogg",
              "audio/x-vorbis+ogg", "audio/opus", "audio/flac", "audio/x-flac")

# mutagen picks the format from the header, but a tagless MP3 has no magic number it scores, and
# MP4/Ogg readers want the type their header says: when guessing fails, the MIME type decides.
_BY_MIME = {"audio/mpeg": MP3, "audio/mp3": MP3, "audio/x-m4a": MP4, "audio/mp4": MP4,
            "audio/ogg": OggVorbis, "application/ogg": OggVorbis, "audio/x-vorbis+ogg": OggVorbis,
            "audio/opus": OggOpus, "audio/flac": FLAC, "audio/x-flac": FLAC}

# Logical field -> keys in ID3 (frame ids), MP4 (atom names) and Vorbis comments (FLAC, Ogg).
_KEYS = {
    "artist": ("TPE1", "TPE2", "\xa9ART", "aART", "artist", "albumartist"),
    "album": ("TALB", "\xa9alb", "album"),
    "title": ("TIT2", "\xa9nam", "title"),
    "year": ("TDRC", "TYER", "\xa9day", "date", "year"),
    "genre": ("TCON", "\xa9gen", "genre"),
    "comment": ("COMM", "\xa9cmt", "comment", "description"),
}
_YEAR = re.compile(r"\d{4}")


def _strings(value) -> list[str]:
    texts = getattr(value, "text", value)  # ID3 frames carry a list in .text
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
        texts = [texts]
    out = []
    for text in texts:
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        if text.strip():
            out.append(" ".join(text.split()))
    return out


def _field(tags, name: str) -> str:
    if tags is None:
        return ""
    for key in _KEYS[name]:
        if hasattr(tags, "getall") and key.isupper():  # ID3: COMM:<desc>:<lang> and friends
            values = [text for frame in tags.getall(key) for text in _strings(frame)]
        else:
            try:
                values = _strings(tags[key])
            except (KeyError, ValueError, TypeError):
                continue
        if values:
            return ", ".join(dict.fromkeys(values))
    return ""


def _length(seconds: float) -> str:
    total = int(seconds)  # whole seconds, as a player shows them
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _load(data: bytes, mimetype: str):
    audio = mutagen.File(io.BytesIO(data))
    if audio is None and mimetype in _BY_MIME:
        audio = _BY_MIME[mimetype](io.BytesIO(data))
    return audio


def prepare_audio(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        audio = _load(data, mimetype)
    except (mutagen.MutagenError, ValueError, KeyError, IndexError, EOFError, OSError) as err:
        raise PreparationError(f"not readable as audio: {type(err).__name__}: {err}"[:200]) from None
    if audio is None:
        raise PreparationError("not a recognised audio format")
    tags = audio.tags
    artist, album, title = (_field(tags, name) for name in ("artist", "album", "title"))
    year = _field(tags, "year")
    year = (_YEAR.search(year) or [year])[0]
    info = audio.info
    length = _length(info.length) if getattr(info, "length", 0) else ""
    bitrate = getattr(info, "bitrate", 0) or 0
    parts = [artist, album, title, year, length, f"{round(bitrate / 1000)}kbps" if bitrate else ""]
    return Prepared(title=" - ".join(p for p in (artist, title) if p),
                    content=", ".join(p for p in parts if p),
                    metadata=" ".join(p for p in (_field(tags, "genre"), _field(tags, "comment")) if p))
