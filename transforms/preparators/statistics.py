"""Statistics packages' data files: SAS datasets (``.sas7bdat``) and transport files (``.xpt``), SPSS
(``.sav``, ``.zsav``) and Stata (``.dta``) files, read by pyreadstat (ReadStat's C library in a wheel). The
dataset's label is the title; the variables' labels (else names) are the headlines; the text is the
variables (name, label, value labels), then each row's values separated by spaces (a labelled value as its
label; a value in a ``PERCENTw.d`` format as SAS shows it, ``66.7%`` for 0.6666…; dates and times as ISO 8601),
at most ``max_rows`` rows (more is said in the report, ``partial``).

libmagic names none of these, so :func:`data_file_type` types them by their own signatures; an old
binary Stata file (before format 117) has none worth the name and is typed by its ``.dta`` name as well.
"""

from __future__ import annotations

import datetime
import io
import math
import re

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

REVISION = 1  # part of the preparation fingerprint (base.py): 1 shows PERCENT formats as SAS does
SAS_DATA, SAS_XPORT = "application/x-sas-data", "application/x-sas-xport"
SPSS, STATA = "application/x-spss-sav", "application/x-stata-dta"
MIME_TYPES = (SAS_DATA, SAS_XPORT, SPSS, STATA)
DEFAULTS = (("max_rows", 100_000),)
_NAMES = {SAS_DATA: "SAS", SAS_XPORT: "SAS transport", SPSS: "SPSS", STATA: "Stata"}
_SAS_MAGIC = bytes(12) + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011")
_XPORT_MAGIC = b"HEADER RECORD*******LIBRARY HEADER RECORD!!!!!!!"
_SPSS_MAGIC = (b"$FL2", b"$FL3")
_STATA_XML = b"<stata_dta>"
_PERCENT = re.compile(r"PERCENT(\d*)(?:\.(\d+))?", re.IGNORECASE)  # SAS's PERCENTw.d: the value × 100, d decimals
_OLD_STATA = range(0x69, 0x74)  # formats 105–115: the first byte, then the byte order (1 or 2)


def data_file_type(data: bytes, name: str) -> str | None:
    """The type of a statistics data file by its signature, or None."""
    if data.startswith(_SAS_MAGIC):
        return SAS_DATA
    if data.startswith(_XPORT_MAGIC):
        return SAS_XPORT
    if data.startswith(_SPSS_MAGIC):
        return SPSS
    if data.startswith(_STATA_XML):
        return STATA
    if name.lower().endswith(".dta") and len(data) > 4 and data[0] in _OLD_STATA and data[1] in (1, 2):
        return STATA
    return None


def _reader(mimetype: str):
    import pyreadstat  # loaded on the first data file

    return {SAS_DATA: pyreadstat.read_sas7bdat, SAS_XPORT: pyreadstat.read_xport, SPSS: pyreadstat.read_sav,
            STATA: pyreadstat.read_dta}[mimetype]


def _value(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):  # missing
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    import numpy  # pyreadstat's own dependency, loaded with it

    if isinstance(value, float) and float(numpy.float32(value)) == value:  # a float32 column (Stata's "float")
        return str(numpy.float32(value))  # 5.1, not 5.099999904632568
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return " ".join(str(value).split())


def _formatted(values, display_format: str | None):
    """A column's values as its SAS display format shows them, for the formats done here (PERCENT)."""
    percent = _PERCENT.fullmatch(display_format or "")
    if percent is None:
        return values
    decimals = min(int(percent.group(2) or 0), 15)  # a float holds no more
    return [f"{value * 100:.{decimals}f}%" if isinstance(value, float) and not math.isnan(value) else value
            for value in values]


def _labelled(values, labels: dict | None):
    """A column's values, each shown by its value label where it has one (SPSS's 1 as "setosa")."""
    return values if not labels else [labels.get(value, value) for value in values]


def _variables(meta) -> list[str]:
    """One line per variable: its name, its label, the labels of its values."""
    labels = dict(zip(meta.column_names, meta.column_labels or (), strict=False))
    lines = []
    for name in meta.column_names:
        values = (meta.variable_value_labels or {}).get(name, {})
        line = " ".join(filter(None, (name, labels.get(name) or "", *map(str, values.values()))))
        lines.append(line)
    return lines


def prepare_statistics(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    kind = mimetype if mimetype in MIME_TYPES else data_file_type(data, url)
    if kind is None:
        raise PreparationError("not a SAS, SPSS or Stata data file")
    try:
        read = _reader(kind)
        total = read(io.BytesIO(data), metadataonly=True, output_format="dict")[1].number_rows  # a row_limit's meta counts the rows read
        columns, meta = read(io.BytesIO(data), output_format="dict", row_limit=params["max_rows"])
    except Exception as err:  # noqa: BLE001 - ReadStat's errors (ReadstatError, PyreadstatError) and damage
        raise PreparationError(f"not readable as {_NAMES[kind]} data: {type(err).__name__}: {err}"[:200]) from None
    names = list(columns)
    formats = meta.original_variable_types or {}
    shown = [_formatted(_labelled(columns[name], (meta.variable_value_labels or {}).get(name)), formats.get(name))
             for name in names]
    rows = zip(*shown, strict=False) if names else ()
    lines = [" ".join(filter(None, map(_value, row))) for row in rows]
    title = meta.file_label or meta.table_name or ""
    partial = f"read {params['max_rows']} of {total} rows" if (total or 0) > params["max_rows"] else ""
    content = "\n".join(filter(None, (*_variables(meta), *lines)))
    headlines = [label or name for name, label in zip(names, meta.column_labels or names, strict=False)]
    return Prepared(title=title, content=content, headlines=headlines, partial=partial)
