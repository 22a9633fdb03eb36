"""Microsoft Access databases (``.mdb`` Jet 3/4, ``.accdb`` ACE): every user table's rows, read by
mdbtools (Debian package mdbtools, a helper program as mandoc is for man pages: ``helpers``). No Python
library reads Jet pages; mdbtools is what Debian ships for it, and it runs here on a copy in an empty
folder, under the time bound, one ``mdb-export`` per table.

The table names are the headlines; each table is its name on a line, then its rows as CSV gives them
(column names first), fields separated by spaces, rich-text memos (HTML) as their text; dates as ISO 8601
(``2015-06-24``, with the time when it is not midnight: mdb-export's default ``06/24/15 00:00:00`` hid the
century from a search for 2015), Yes/No fields as ``TRUE``/``FALSE``, and numbers without the zeros mdb-export
pads currency with (``6.23``, not ``6.2300``), as Access shows them. Binary columns are left out of the rows
(``-b strip``); an OLE Object column's objects (a Word document, a PDF, a file inserted as a package) are prepared by
their own type and inlined after the tables (``embedded``, under its bounds), as a Word file's objects are: the
tables that have one (``mdb-schema``) are exported a second time with binary values as hex, for them alone, until
the objects found hold the archive bounds' ``max_bytes``. At most ``max_tables`` tables and ``max_output_bytes`` of
text per table are read; more is said in the report (``partial``). Without mdbtools this preparator fails with the reason, the
summary warns once with the count, and installing the package re-prepares the databases.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import tempfile

from beamtrawl.transforms.preparators import archive, embedded, ole_objects
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.external import run_in
from beamtrawl.transforms.preparators.helpers import Helper

REVISION = 3  # part of the preparation fingerprint (base.py): 1 writes ISO dates, TRUE/FALSE, unpadded numbers; 2
# keeps the zeros of texts such as "10.10"; 3 inlines the objects of OLE Object columns
MIME_TYPES = ("application/x-msaccess", "application/vnd.ms-access", "application/msaccess")
DEFAULTS = (("timeout", 60.0), ("max_tables", 500), ("max_output_bytes", 16 * 1024**2))
EXPORT = Helper("mdb-export", "mdbtools", "Access databases")
TABLES = Helper("mdb-tables", "mdbtools", "Access databases")
SCHEMA = Helper("mdb-schema", "mdbtools", "Access databases")
HELPERS = (EXPORT, TABLES, SCHEMA)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_RICH_TEXT = ("<div", "<font")  # how Access stores a rich-text memo: HTML
# mdb-export's CSV types no column: only a value written as it writes a date at midnight or a currency amount
# (four decimals) is shortened. A text "10.10" or "2.0" (a version) once lost its zeros.
_MIDNIGHT = re.compile(r"(\d{4}-\d\d-\d\d) 00:00:00")
_CURRENCY = re.compile(r"(-?\d+)\.(\d{4})")  # 6.2300, 0.0000
_EXPORT = ("-b", "strip", "-B", "-D", "%Y-%m-%d", "-T", "%Y-%m-%d %H:%M:%S")
# mdb-schema's DDL: a table's name, then a column a line: "\t[Photo]\t\t\tOLE (255), "
_SCHEMA_TABLE = re.compile(r"^CREATE TABLE \[(.*)\]$")
_SCHEMA_OLE = re.compile(r"^\t\[(.*)\]\t+OLE\b")
_OBJECT_BYTES = dict(archive.DEFAULTS)["max_bytes"]  # no more hex exports once the objects hold this much
_OLE_HEADER = b"\x15\x1c"  # Access's own header before the OLE 1 object: signature, then its size (a WORD)


def _field(value: str) -> str:
    if value.lstrip().startswith(_RICH_TEXT):
        value = html.unescape(_TAG.sub(" ", value))
    currency = _CURRENCY.fullmatch(value)
    if currency is not None:
        value = ".".join(filter(None, (currency.group(1), currency.group(2).rstrip("0"))))
    midnight = _MIDNIGHT.fullmatch(value)
    return midnight.group(1) if midnight is not None else " ".join(value.split())


def _csv(csv_text: str) -> list[list[str]]:
    """The rows of mdb-export's CSV, whose fields (a memo, an object as hex) may pass the csv module's
    128 KiB field limit: the process-wide limit is raised to the text's length while it is read."""
    before = csv.field_size_limit(max(len(csv_text), csv.field_size_limit()))
    try:
        return list(csv.reader(io.StringIO(csv_text)))
    finally:
        csv.field_size_limit(before)


def _rows(csv_text: str) -> list[str]:
    """Each CSV row as its non-empty fields separated by spaces."""
    lines = []
    for row in _csv(csv_text):
        line = " ".join(filter(None, map(_field, row)))
        if line:
            lines.append(line)
    return lines


def _ole_columns(schema: str) -> dict[str, set[str]]:
    """{table: its OLE Object columns} from mdb-schema's DDL, for the tables that have one."""
    found: dict[str, set[str]] = {}
    table = None
    for line in schema.splitlines():
        created = _SCHEMA_TABLE.match(line)
        if created is not None:
            table = created.group(1)
            continue
        column = _SCHEMA_OLE.match(line)
        if column is not None and table is not None:
            found.setdefault(table, set()).add(column.group(1))
    return found


def _objects(csv_text: str, table: str, columns: set[str]):
    """(name, opener, size) of the OLE objects in an export with binary values as hex, ``table/column row N``."""
    header, *rows = _csv(csv_text) or [[]]
    wanted = [(i, name) for i, name in enumerate(header) if name in columns]
    for number, row in enumerate(rows, 1):
        for i, name in wanted:
            try:
                blob = bytes.fromhex(row[i]) if i < len(row) else b""
            except ValueError:  # cut by max_output_bytes
                continue
            if blob.startswith(_OLE_HEADER) and len(blob) > 4:
                part = ole_objects.ole1_part(f"{table}/{name} row {number}", blob[int.from_bytes(blob[2:4], "little"):])
                yield *part, len(blob)


def _optional(argv: list[str], folder: str, run: dict) -> str:
    """The output of a run that only adds to the tables' text (the objects): its failure costs that, no more."""
    try:
        return run_in(argv, folder, run)
    except PreparationError:
        return ""


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
        lines, headlines, objects = [], [], []
        ole = _ole_columns(_optional([SCHEMA.program, path, "access"], folder, run)) if tables else {}
        for table in tables[:params["max_tables"]]:
            rows = _rows(run_in([EXPORT.program, *_EXPORT, path, table], folder, run))
            headlines.append(table)
            lines += [table, *rows]
            if table in ole and sum(size for _name, _opener, size in objects) < _OBJECT_BYTES:
                hexed = _optional([EXPORT.program, "-b", "hex", path, table], folder, run)
                objects += _objects(hexed, table, ole[table])
    partial = f"read {params['max_tables']} of {len(tables)} tables" if len(tables) > params["max_tables"] else ""
    prepared = Prepared(content="\n".join(lines), headlines=headlines, partial=partial)
    return embedded.inline(prepared, [(name, opener) for name, opener, _size in objects], url)
