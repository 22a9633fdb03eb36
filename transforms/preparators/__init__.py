"""Preparators turn bytes into searchable text. One module per family of formats; this module
lists the built-in ones and picks, for a document, the preparators to try in order. Third-party
preparators register through the entry-point group ``beamtrawl.preparators`` (see ``registry``)."""

from __future__ import annotations

import re

from beamtrawl.transforms.preparators import (
    access,
    archive,
    audio,
    chm,
    code,
    dbf,
    encrypted,
    epub,
    external,
    html,
    hwp,
    image,
    info,
    iwork,
    java_class,
    legacy,
    mail,
    man,
    markdown,
    matlab,
    mbox,
    metafile,
    mif,
    odf,
    office,
    onenote,
    outlook,
    pdf,
    plist,
    publisher,
    quattro,
    rtf,
    statistics,
    tnef,
    visio,
    vsdx,
    warc,
    wordml,
    wordperfect,
    xml,
    xps,
)
from beamtrawl.transforms.preparators.base import PreparationError, PreparatorSpec, Prepared
from beamtrawl.transforms.preparators.chain import Chain, chain_for, prepare_nested
from beamtrawl.transforms.preparators.metadata_only import prepare_metadata_only
from beamtrawl.transforms.preparators.text import MIME_TYPES as TEXT_MIME_TYPES
from beamtrawl.transforms.preparators.text import prepare_text

BUILTIN = (
    PreparatorSpec("html", html.prepare_html, ("text/html", "application/xhtml+xml"), priority=10,
                   params=html.DEFAULTS),
    PreparatorSpec("pdf", pdf.prepare_pdf, pdf.MIME_TYPES, priority=10, params=pdf.DEFAULTS),
    PreparatorSpec("office", office.prepare_ooxml, office.MIME_TYPES, priority=10, params=office.DEFAULTS),
    PreparatorSpec("mail", mail.prepare_mail, mail.MIME_TYPES, priority=10),
    PreparatorSpec("outlook", outlook.prepare_outlook, outlook.MIME_TYPES, priority=10, params=outlook.DEFAULTS),
    PreparatorSpec("mbox", mbox.prepare_mbox, mbox.MIME_TYPES, priority=10, params=mbox.DEFAULTS),
    PreparatorSpec("wordml", wordml.prepare_wordml, wordml.MIME_TYPES, priority=10),  # before xml: xml is its fallback
    PreparatorSpec("xml", xml.prepare_xml, xml.MIME_TYPES, priority=10),
    PreparatorSpec("archive", archive.prepare_archive, archive.MIME_TYPES, priority=10,
                   params=archive.DEFAULTS),
    PreparatorSpec("odf", odf.prepare_odf, odf.MIME_TYPES, priority=10),
    PreparatorSpec("rtf", rtf.prepare_rtf, rtf.MIME_TYPES, priority=10),
    PreparatorSpec("epub", epub.prepare_epub, epub.MIME_TYPES, priority=10),
    PreparatorSpec("image", image.prepare_image, image.MIME_TYPES, priority=10, params=image.DEFAULTS),
    PreparatorSpec("audio", audio.prepare_audio, audio.MIME_TYPES, priority=10),
    PreparatorSpec("markdown", markdown.prepare_markdown, markdown.MIME_TYPES, priority=10),
    PreparatorSpec("info", info.prepare_info, info.MIME_TYPES, priority=10),
    PreparatorSpec("man", man.prepare_man, man.MIME_TYPES, priority=10, params=man.DEFAULTS),
    PreparatorSpec("warc", warc.prepare_warc, warc.MIME_TYPES, priority=10,
                   params=warc.DEFAULTS),
    PreparatorSpec("chm", chm.prepare_chm, chm.MIME_TYPES, priority=10, params=chm.DEFAULTS),
    PreparatorSpec("dbf", dbf.prepare_dbf, dbf.MIME_TYPES, priority=10, params=dbf.DEFAULTS),
    PreparatorSpec("plist", plist.prepare_plist, plist.MIME_TYPES, priority=10),
    PreparatorSpec("iwork", iwork.prepare_iwork, iwork.MIME_TYPES, priority=10),
    PreparatorSpec("tnef", tnef.prepare_tnef, tnef.MIME_TYPES, priority=10),
    PreparatorSpec("mif", mif.prepare_mif, mif.MIME_TYPES, priority=10),
    PreparatorSpec("hwp", hwp.prepare_hwp, hwp.MIME_TYPES, priority=10),
    PreparatorSpec("metafile", metafile.prepare_metafile, metafile.MIME_TYPES, priority=10),
    PreparatorSpec("matlab", matlab.prepare_matlab, matlab.MIME_TYPES, priority=10),
    PreparatorSpec("publisher", publisher.prepare_publisher, publisher.MIME_TYPES, priority=10),
    PreparatorSpec("quattro", quattro.prepare_quattro, quattro.MIME_TYPES, priority=10),
    PreparatorSpec("visio", visio.prepare_visio, visio.MIME_TYPES, priority=10, params=visio.DEFAULTS),
    PreparatorSpec("vsdx", vsdx.prepare_vsdx, vsdx.MIME_TYPES, priority=10),
    PreparatorSpec("xps", xps.prepare_xps, xps.MIME_TYPES, priority=10),
    PreparatorSpec("java_class", java_class.prepare_class, java_class.MIME_TYPES, priority=10),
    PreparatorSpec("legacy_office", legacy.prepare_legacy_office, legacy.MIME_TYPES, priority=10),
    PreparatorSpec("encrypted", encrypted.prepare_encrypted, encrypted.MIME_TYPES, priority=10),
    PreparatorSpec("onenote", onenote.prepare_onenote, onenote.MIME_TYPES, priority=10),
    PreparatorSpec("statistics", statistics.prepare_statistics, statistics.MIME_TYPES, priority=10,
                   params=statistics.DEFAULTS),
    PreparatorSpec("access", access.prepare_access, access.MIME_TYPES, priority=10, params=access.DEFAULTS),
    PreparatorSpec("wordperfect", wordperfect.prepare_wordperfect, wordperfect.MIME_TYPES, priority=10,
                   params=wordperfect.DEFAULTS),
    PreparatorSpec("code", code.prepare_code, code.CODE_MIME_TYPES, priority=5, url_pattern=code.URL_PATTERN,
                   url_and_mime=True),
    PreparatorSpec("text", prepare_text, TEXT_MIME_TYPES, priority=0),
    # regain's EmptyPreparator catch-all: every document is at least found by name, path, type, date.
    PreparatorSpec("metadata_only", prepare_metadata_only, priority=-10, url_pattern=re.compile(""),
                   catch_all=True),
)
#: Registered but with no instance until configured: the external preparator needs a command.
CONFIGURABLE = (
    PreparatorSpec("external", external.prepare_external, priority=10, params=external.DEFAULTS,
                   check_params=external.check_params),
)


__all__ = ["BUILTIN", "CONFIGURABLE", "Chain", "PreparationError", "PreparatorSpec", "Prepared", "chain_for",
           "prepare_nested"]
