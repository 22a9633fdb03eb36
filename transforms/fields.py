"""The value types a configuration file is written in (a size, a ratio, seconds, a regex, a URL or path
relative to the file), the base of every section, and the one way a check reports a problem.

Each type carries its own check and its own message, so a section model only names its fields' types;
the loader turns pydantic's error locations into the ``file: key.path: problem`` line."""

from __future__ import annotations

import contextlib
import difflib
import math
import os
import re
from typing import Annotated, Any

import yaml
from beamtrawl.transforms.urls import is_path, normalize_url
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
              "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}
MAX_SECONDS = 365 * 24 * 3600  # a year: NaN, infinity or 1e10 s would pass "positive" and break every wait (select, sleep)
MAX_SIZE = 2**63 - 1  # the largest size the system's limits (setrlimit) take


class Problem(Exception):
    """A mistake found while a checked file becomes the crawl's configuration (a preparator that is not
    registered, a plugin that does not load): ``key`` is its path (``preparators[1].name``)."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


def fail(problem: str, at: str = "") -> PydanticCustomError:
    """A problem with the value being checked, or with the key ``at`` below it (``.name``, ``[2].regex``)."""
    return PydanticCustomError("beamtrawl", "{problem}", {"problem": problem, "at": at})


_MESSAGES = {
    "missing": "is required",
    "bool_type": "must be true or false, got {input!r}",
    "int_type": "must be an integer, got {input!r}",
    "greater_than_equal": "must be at least {ge}, got {input!r}",
    "less_than_equal": "must be at most {le}, got {input!r}",
    "string_type": "must be a string, got {kind}",
    "model_type": "must be a mapping, got {kind}",
    "dict_type": "must be a mapping, got {kind}",
    "tuple_type": "must be a list, got {kind}",
    "extra_forbidden": "unknown key",
}


def explain(error: dict) -> tuple[str, str]:
    """One pydantic error as (key path, problem): ``(".whitelist[2].regex", "unbalanced parenthesis …")``.
    The path starts with a separator (``.whitelist[2].regex``, ``[0].x`` for a list item) so it can follow
    another path; a dict key's own check (``[key]``) is named by the key."""
    ctx = error.get("ctx") or {}
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                   for part in error["loc"] if part != "[key]") + ctx.get("at", "")
    if error["type"] == "beamtrawl":
        return path, ctx["problem"]
    if error["type"] == "value_error":  # a ValueError a check let through: its text, without pydantic's prefix
        return path, str(ctx.get("error") or error["msg"])
    if error["type"] == "literal_error":
        choices = ctx["expected"].replace("'", "")
        return path, f"must be {choices if choices.count(',') == 0 else 'one of ' + choices}, got {error['input']!r}"
    template = _MESSAGES.get(error["type"])
    if template is None:
        return path, error["msg"]
    return path, template.format(input=error["input"], kind=kind(error["input"]), **ctx)


def kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__)


class Section(BaseModel):
    """A mapping of the file: frozen, unknown keys refused with the list of the known ones (``extra="forbid"``
    is the backstop). Each field is documented by the docstring below it; :mod:`.reference` reads them from
    the source (pydantic's ``use_attribute_docstrings`` would too, at a cost to every start)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = {field.alias or name for name, field in cls.model_fields.items()}
            for key in data:
                if key not in allowed:
                    allowed |= cls.other_keys()
                    near = difflib.get_close_matches(str(key), allowed, n=1)  # first: the list may be cut
                    hint = f", did you mean {near[0]}?" if near else ""
                    raise fail(f"unknown key{hint} (allowed: {', '.join(sorted(allowed))})", at=f".{key}")
        return data


    @classmethod
    def other_keys(cls) -> set[str]:
        """Keys the section also takes that are not its fields, for the message on an unknown key (the crawl
        file: the sections of the sources it does not name)."""
        return set()


def context(info: ValidationInfo) -> dict:
    """What a check needs to know of the file: ``base`` (its folder) and ``crawling``."""
    return info.context or {"base": os.getcwd(), "crawling": True}


class FromEnvironment(str):
    """A string value that was one whole ``${NAME}``: where the schema wants a number or a flag, its text is read
    as YAML reads a plain scalar (``max_depth: ${DEPTH}`` with DEPTH=3 is 3), since the environment has only text."""


def _scalar(value: Any) -> Any:
    if isinstance(value, FromEnvironment):
        with contextlib.suppress(yaml.YAMLError):
            typed = yaml.safe_load(value)
            if isinstance(typed, (bool, int, float)):
                return typed
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(f"must be a non-empty string, got {kind(value) if not isinstance(value, str) else repr(value)}")
    return value


def size(value: Any) -> int:
    """Bytes from ``1048576``, ``'10 MiB'`` or ``'2GB'``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_SIZE:
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    if not match or match.group(2).lower() not in SIZE_UNITS or float(match.group(1)) <= 0:
        raise fail(f"must be a positive size such as 1048576, '10 MiB' or '2GB', got {value!r}")
    size = int(float(match.group(1)) * SIZE_UNITS[match.group(2).lower()])
    if size < 1:
        raise fail(f"must be at least 1 byte, got {value!r}")
    if size > MAX_SIZE:
        raise fail(f"must be at most 8 EiB, got {value!r}")
    return size


def _number(words: str, low: float = -math.inf, high: float = math.inf, above: bool = False) -> Any:
    """A number from ``low`` (excluded if ``above``) to ``high``; ``words`` say so in the message (NaN is none)."""
    def check(value: Any) -> float:
        value = _scalar(value)
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not ((value > low if above else value >= low) and value <= high)):
            raise fail(f"must be {words}, got {value!r}")
        return float(value)
    return BeforeValidator(check)


def _regex(value: Any) -> re.Pattern:
    try:
        return re.compile(_text(value))
    except re.error as err:
        raise fail(str(err)) from None


def _url(value: Any, info: ValidationInfo) -> str:
    text = _text(value)
    if is_path(text):
        text = os.path.join(context(info)["base"], text)  # a plain path, relative to the configuration file
    if "\\" in text:
        raise fail("use forward slashes in URLs")
    try:
        return normalize_url(text)
    except ValueError as err:
        raise fail(f"not a valid URL: {err}") from None


def _path(value: Any, info: ValidationInfo) -> str:
    text = _text(value)
    if "\0" in text:  # "\0" in YAML: the file system would refuse it mid-crawl ("embedded null byte")
        raise fail("must not contain a NUL character")
    return text if "://" in text else os.path.normpath(os.path.join(context(info)["base"], text))


def _file(value: Any, info: ValidationInfo) -> str:
    path = _path(value, info)
    if not os.path.isfile(path):
        raise fail(f"no such file: {path}")
    return path


def _file_when_crawling(value: Any, info: ValidationInfo) -> str:
    return _file(value, info) if context(info)["crawling"] else _path(value, info)


def exactly_one(*keys: str, hint: str = "") -> Any:
    """A section's check that exactly one of its ``keys`` is given (``hint``: said after the first)."""
    def check(model):
        if sum(getattr(model, key) is not None for key in keys) != 1:
            raise fail(f"needs exactly one of '{keys[0]}'{hint} or " + " or ".join(f"'{k}'" for k in keys[1:]))
        return model
    return model_validator(mode="after")(check)


def matching(pattern: str, problem: str) -> Any:
    """A non-empty string ``pattern`` matches whole; ``problem`` says what it must be (``{value!r}``: what it is)."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        text = _text(value)
        if not compiled.fullmatch(text):
            raise fail(problem.format(value=text))
        return text
    return Annotated[str, BeforeValidator(check), WithJsonSchema({"type": "string", "pattern": f"^{pattern}$"})]


Flag = Annotated[bool, Strict(), BeforeValidator(_scalar)]
Count = Annotated[int, Strict(), BeforeValidator(_scalar)]
Text = Annotated[str, BeforeValidator(_text), Field(min_length=1)]
Size = Annotated[int, BeforeValidator(size), WithJsonSchema({"type": ["integer", "string"], "format": "size"})]
Ratio = Annotated[float, _number("a number from 0 to 1", 0, 1),
                  WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]
Seconds = Annotated[float, _number(f"a positive number of seconds up to {MAX_SECONDS} (a year)", 0, MAX_SECONDS, True),
                    WithJsonSchema({"type": "number", "format": "seconds", "exclusiveMinimum": 0, "maximum": MAX_SECONDS})]
Delay = Annotated[float, _number(f"a number of seconds from 0 to {MAX_SECONDS} (a year)", 0, MAX_SECONDS),
                  WithJsonSchema({"type": "number", "format": "seconds", "minimum": 0, "maximum": MAX_SECONDS})]
Number = Annotated[float, _number("a number")]
Regex = Annotated[re.Pattern, BeforeValidator(_regex)]
Url = Annotated[str, BeforeValidator(_url), WithJsonSchema({"type": "string", "format": "url"})]
Path = Annotated[str, BeforeValidator(_path), WithJsonSchema({"type": "string", "format": "path"})]
ExistingFile = Annotated[str, BeforeValidator(_file), WithJsonSchema({"type": "string", "format": "path"})]
FileWhenCrawling = Annotated[str, BeforeValidator(_file_when_crawling),
                             WithJsonSchema({"type": "string", "format": "path"})]
"""A file only a crawl opens: searching does not ask for it."""
OrEmpty = BeforeValidator(lambda value: {} if value is None else value)
"""A section written as nothing (``http:`` alone) has its defaults."""
Items = BeforeValidator(lambda value: () if value is None else value)
"""A list written as nothing is empty."""
