"""Microsoft Access databases (``.mdb`` Jet 3/4, ``.accdb`` ACE): every user table's rows, read by
mdbtools (Debian package mdbtools, a helper program as mandoc is for man pages: ``helpers``). No Python
library reads Jet pages; mdbtools is what Debian ships for it, and it runs here on a copy in an empty
folder, under the time bound, one ``mdb-export`` per table.

The table names are the headlines; each table is its name on a line, then its rows as CSV gives them
(column names first), fields separated by spaces, rich-text memos (HTML) as their text; dates as ISO 8601
(``2015-06-24``, with the time when it is not midnight: mdb-export's default ``06/24/15 00:00:00`` hid the
century from a search for 2015), Yes/No fields as ``TRUE``/``FALSE``, and numbers without the zeros mdb-export
pads currency with (``6.23``, not ``6.2300``), as Access shows them. Binary columns (OLE objects, attachments) are left
out (``-b strip``). At most ``max_tables`` tables and ``max_output_bytes`` of text per table are read;
more is said in the report (``partial``). Without mdbtools this preparator fails with the reason, the
summary warns once with the count, and installing the package re-prepares the databases.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import tempfile

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.external import run_in
from beamtrawl.transforms.preparators.helpers import Helper

REVISION = 2  # part of the preparation fingerprint (base.py): 1 writes ISO dates, TRUE/FALSE, unpadded numbers; 2
# keeps the zeros of texts such as "10.10"
MIME_TYPES = ("application/x-msaccess", "application/vnd.ms-access", "application/msaccess")
DEFAULTS = (("timeout", 60.0), ("max_tables", 500), ("max_output_bytes", 16 * 1024**2))
EXPORT = Helper("mdb-export", "mdbtools", "Access databases")
TABLES = Helper("mdb-tables", "mdbtools", "Access databases")
HELPERS = (EXPORT, TABLES)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_RICH_TEXT = ("<div", "<font")  # how Access stores a rich-text memo: HTML
# mdb-export's CSV types no column: only a value written as it writes a date at midnight or a currency amount
# (four decimals) is shortened. A text "10.10" or "2.0" (a version) once lost its zeros.
_MIDNIGHT = re.compile(r"(\d{4}-\d\d-\d\d) 00:00:00")
_CURRENCY = re.compile(r"(-?\d+)\.(\d{4})")  # 6.2300, 0.0000
_EXPORT = ("-b", "strip", "-B", "-D", "%Y-%m-%d", "-T", "%Y-%m-%d %H:%M:%S")


def _field(value: str) -> str:
    if value.lstrip().startswith(_RICH_TEXT):
        value = html.unescape(_TAG.sub(" ", value))
    currency = _CURRENCY.fullmatch(value)
    if currency is not None:
        value = ".".join(filter(None, (currency.group(1), currency.group(2).rstrip("0"))))
    midnight = _MIDNIGHT.fullmatch(value)
    return midnight.group(1) if midnight is not None else " ".join(value.split())


def _rows(csv_text: str) -> list[str]:
    """Each CSV row as its non-empty fields separated by spaces."""
    lines = []
    for row in csv.reader(io.StringIO(csv_text)):
        line = " ".join(filter(None, map(_field, row)))
        if line:
            lines.append(line)
    return lines


def prepare_access(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    for helper in HELPERS:
        if not helper.installed():
            raise PreparationError(helper.missing())
    run = {**params, "check_exit_code": True}
    with tempfile.TemporaryDirectory(prefix="beamtrawl-") as folder:
        path = os.path.join(folder, "database.mdb")
        with open(path, "wb") as handle:
            handle.write(data)
        listed = run_in([TABLES.program, "-1", path], folder, run)  # user tables, one a line
        tables = [name for name in listed.splitlines() if name.strip()]
        if not tables and data[4:19] not in (b"Standard Jet DB", b"Standard ACE DB"):
            raise PreparationError("not an Access database: no Jet or ACE header")
        lines, headlines = [], []
        for table in tables[:params["max_tables"]]:
            rows = _rows(run_in([EXPORT.program, *_EXPORT, path, table], folder, run))
            headlines.append(table)
            lines += [table, *rows]
    partial = f"read {params['max_tables']} of {len(tables)} tables" if len(tables) > params["max_tables"] else ""
    return Prepared(content="\n".join(lines), headlines=headlines, partial=partial)
