"""Web archives: WARC (ISO 28500, as Heritrix, wget --warc-file and Common Crawl write them) and the older
Internet Archive ARC, plain or gzip-compressed per record, read by warcio.

Each ``response``, ``resource`` or ``conversion`` record is one captured document: its payload (the HTTP
body, without the HTTP headers) is prepared by its own type as a part named after the captured URL
(``…/crawl.warc.gz!/http://example.com/``), its title, metadata and text inlined into the archive's document under a title line
(the captured URL), each title a headline, as the messages of a mailbox are (``mbox.join_messages``): why
inlined, see ``outlook``. Requests, metadata and warcinfo records hold no document and are skipped.

Bounds: at most ``max_records`` documents, and at most ``max_bytes`` of payload read in all (a payload is
read up to what is left; a cut one of a non-text type is only named). What a bound stops is reported.
"""

from __future__ import annotations

import io

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_part
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.preparators.mbox import join_messages
from beamtrawl.transforms.preparators.text import decode_text

WARC_TYPES = ("application/warc", "application/x-warc")
ARC_TYPES = ("application/x-ia-arc", "application/x-internet-archive")
MIME_TYPES = (*WARC_TYPES, *ARC_TYPES)
DEFAULTS = (("max_records", 10000), ("max_bytes", 100 * 1024 * 1024))
_DOCUMENT_RECORDS = ("response", "resource", "conversion")
_TRUSTED = ("text/html", "application/xhtml+xml", "text/plain")  # declared types taken as they are, as a crawl does


def _payload_text(body: bytes, part_url: str, declared: str, cut: bool) -> Prepared | None:
    """The payload prepared by its own type; text (or HTML the sniffer is unsure of) decoded when no
    preparator is reachable (this preparator tested on its own)."""
    trusted = declared.split(";", 1)[0].strip() if declared.startswith(_TRUSTED) else ""
    prepared, _errors, mimetype = prepare_part(body, part_url, text_only=cut, declared=trusted)
    if prepared is not None:
        return prepared
    kind = mimetype or declared
    if kind.startswith("text/html"):
        return prepare_html(body, part_url, "text/html", {})
    if kind.startswith("text/"):
        return Prepared(content=decode_text(body).strip())
    return None


def _records(data: bytes):
    from warcio.archiveiterator import ArchiveIterator

    return ArchiveIterator(io.BytesIO(data), arc2warc=True)


def prepare_warc(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    from warcio.exceptions import ArchiveLoadFailed

    params = {**dict(DEFAULTS), **params}
    budget, documents, stops = params["max_bytes"], [], []
    try:
        for record in _records(data):
            if record.rec_type not in _DOCUMENT_RECORDS:
                continue
            if len(documents) >= params["max_records"]:
                stops.append(f"max_records ({params['max_records']})")
                break
            target = record.rec_headers.get_header("WARC-Target-URI") or ""
            if budget <= 0:
                stops.append(f"max_bytes ({params['max_bytes']})")
                break
            stream = record.content_stream()
            body = stream.read(budget)
            budget -= len(body)
            cut = budget <= 0 and bool(stream.read(1))
            declared = (record.http_headers.get_header("Content-Type") if record.http_headers else None) \
                or record.content_type or ""
            prepared = _payload_text(body, f"{url}!/{target}", declared.lower(), cut) if body else None
            text = "\n".join(filter(None, (prepared.title, prepared.metadata, prepared.content))) if prepared else ""
            documents.append(Prepared(title=target, content=text))
    except (ArchiveLoadFailed, OSError, EOFError, ValueError) as err:
        if not documents:
            raise PreparationError(f"not a readable web archive: {' '.join(str(err).split())}"[:200]) from None
        stops.append(f"the archive is damaged after {len(documents)} records")
    joined = join_messages(documents, False, "records") if len(documents) > 1 else \
        Prepared(content=f"{documents[0].title}\n{documents[0].content}" if documents else "",
                 headlines=[d.title for d in documents if d.title])
    joined.fields = {"records": str(len(documents))}
    joined.partial = "; ".join(f"web archive read partially: reached {s}" if s.startswith("max") else s
                               for s in stops)
    return joined
