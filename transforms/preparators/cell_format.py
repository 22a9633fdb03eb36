"""A spreadsheet cell's value as Excel displays it, from its number format (``#,##0.00``, ``0%``,
``m/d/yy h:mm``, ``"$"#,##0.00_);[Red]\\("$"#,##0.00\\)``): what a reader of the sheet sees and searches
for, as Tika's (POI's DataFormatter) text has it — ``9/20/18`` and ``1,599.99``, not ``43363`` and
``1599.99``. No Python library renders Excel's format codes, so the common part of them is read here:
sections (positive;negative;zero;text), literals (quoted, ``\\x``), ``_x`` spaces, ``*x`` fills and ``[…]``
colours and locales dropped; digits with grouping, decimals, percent, scientific notation and fractions;
date and time parts. Anything else is shown as the value itself."""

from __future__ import annotations

import datetime
import decimal
import fractions
import re

_TOKENS = re.compile(r'"[^"]*"|\\.|_.|\*.|\[[^\]]*\]|AM/PM|am/pm|A/P|a/p|[yY]+|[mM]+|[dD]+|[hH]+|[sS]+(?:\.0+)?'
                     r"|[0#?,.%Ee+\-/ ]|.", re.DOTALL)
_DATE_PART = re.compile(r"[yYmMdDhHsS]")
_DIGITS = re.compile(r"[0#?]")
# Excel's built-in format 14 shows the system's short date; openpyxl names it mm-dd-yy, POI (Tika) m/d/yy.
_AS_SHOWN = {"mm-dd-yy": "m/d/yy"}


def _sections(code: str) -> list[str]:
    """The format's sections, split at semicolons outside quotes and escapes."""
    parts, current, quoted, escaped = [], "", False, False
    for char in code:
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            current, escaped = current + char, True
        elif char == '"':
            current, quoted = current + char, not quoted
        elif char == ";" and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _literal(token: str) -> str | None:
    """A token's literal text; None for a token that is not literal."""
    if token.startswith('"'):
        return token[1:-1]
    if token.startswith("\\"):
        return token[1:]
    if token.startswith("_"):
        return " "
    if token.startswith(("*", "[")):
        return ""
    return None


def _date(value, tokens: list[str]) -> str:
    twelve = any(t.upper() in ("AM/PM", "A/P") for t in tokens)
    out, after_hour = [], False
    for index, token in enumerate(tokens):
        lower = token.lower()
        literal = _literal(token)
        if literal is not None:
            out.append(literal)
        elif lower[0] == "y":
            out.append(f"{value.year % 100:02d}" if len(token) <= 2 else f"{value.year:04d}")
        elif lower[0] == "m":
            ahead = next((t.lower() for t in tokens[index + 1:] if _DATE_PART.match(t)), "")
            if len(token) <= 2 and (after_hour or ahead.startswith("s")):
                out.append(f"{value.minute:0{len(token)}d}")
            else:
                out.append([str(value.month), f"{value.month:02d}", value.strftime("%b"), value.strftime("%B"),
                            value.strftime("%B")[0]][min(len(token), 5) - 1])
        elif lower[0] == "d":
            out.append([str(value.day), f"{value.day:02d}", value.strftime("%a"), value.strftime("%A")][
                min(len(token), 4) - 1])
        elif lower[0] == "h":
            hour = (value.hour % 12 or 12) if twelve else value.hour
            out.append(f"{hour:0{min(len(token), 2)}d}")
            after_hour = True
            continue
        elif lower[0] == "s":
            out.append(f"{value.second:02d}")
        elif lower in ("am/pm", "a/p"):
            out.append(("AM" if value.hour < 12 else "PM")[: 2 if "/" in lower[2:] or len(lower) > 3 else 1])
        else:
            out.append(token)
        after_hour = after_hour and lower[0] not in "dy"
    return "".join(out)


def _rounded(value: float, decimals: int, grouping: bool) -> str:
    """As Excel rounds (half away from zero, not to even)."""
    exact = decimal.Decimal(repr(value)).quantize(decimal.Decimal(1).scaleb(-decimals), decimal.ROUND_HALF_UP)
    return f"{exact:{',' if grouping else ''}.{decimals}f}"


def _number(value: float, tokens: list[str]) -> str:
    if "%" in tokens:
        value *= 100
    digits = [t for t in tokens if _literal(t) is None and (_DIGITS.fullmatch(t) or t in (",", ".", "/", "E", "e"))]
    body = "".join(digits)
    if "/" in body or "E" in body.upper():  # a fraction ("# ?/?") or scientific notation ("0.00E+00")
        if "/" in body:
            whole = int(value)
            part = fractions.Fraction(abs(value - whole)).limit_denominator(10 ** body.split("/")[1].count("?"))
            text = f"{whole} {part.numerator}/{part.denominator}" if part else str(whole)
        else:
            mantissa = body.upper().split("E")[0]
            text = f"{value:.{mantissa.split('.')[1].count('0') if '.' in mantissa else 0}E}"
        return text
    whole, _dot, fraction = body.partition(".")
    text = _rounded(value, len(_DIGITS.findall(fraction)), "," in whole)
    integer, _dot, decimals = text.partition(".")
    out, placed, after_dot = [], set(), False
    for token in tokens:
        literal = _literal(token)
        if literal is not None:
            out.append(literal)
        elif token == ".":
            after_dot = True
            out.append(".")
        elif _DIGITS.fullmatch(token) or token == ",":
            if after_dot not in placed:  # the digits stand where their first placeholder stands
                out.append(decimals if after_dot else integer)
                placed.add(after_dot)
        else:
            out.append(token)
    return "".join(out).strip()


def _general(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def displayed(value, code: str | None) -> str:
    """``value`` (a number, a datetime, text) as the number format ``code`` displays it."""
    if value is None:
        return ""
    if isinstance(value, (bool, str)):
        return str(value).upper() if isinstance(value, bool) else value
    try:
        sections = _sections(_AS_SHOWN.get(code or "", code or "General"))
        if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
            tokens = _TOKENS.findall(sections[0])
            if not any(_DATE_PART.match(t) and _literal(t) is None for t in tokens):
                return str(value)
            if isinstance(value, datetime.time):
                value = datetime.datetime.combine(datetime.date(1900, 1, 1), value)
            elif not isinstance(value, datetime.datetime):
                value = datetime.datetime.combine(value, datetime.time())
            return _date(value, tokens)
        section = sections[0]
        if value < 0 and len(sections) > 1:
            section, value = sections[1], -value
        elif value == 0 and len(sections) > 2:
            section = sections[2]
        if section.strip().lower() in ("general", ""):
            return _general(value) if section == sections[0] or value >= 0 else f"-{_general(value)}"
        return _number(float(value), _TOKENS.findall(section))
    except (ValueError, IndexError, OverflowError, ZeroDivisionError):
        return _general(value)


# Excel's codes in a page header or footer: sections (&L &C &R), fields (&P page, &D date, &A sheet …), font,
# size, colour and style (&B bold … &O outline, &H shadow); "&&" is an ampersand.
_HEADER_CODE = re.compile(r'&(?:"[^"]*"|\d+|K(?:[0-9A-Fa-f]{6}|\d\d[+-]\d{3})|[LCRPNDTFAZGBIUESXYOH])')


def header_footer_text(raw: str) -> str:
    """A sheet's page header or footer as its words, without Excel's codes (XLSX and XLS store the same)."""
    return " ".join(_HEADER_CODE.sub(" ", raw.replace("&&", "\0")).replace("\0", "&").split())
