"""Reading a crawl file: YAML that refuses what PyYAML would accept silently, ``--set`` overrides, the
schema's check, and every mistake as one line, ``file: key.path: problem``."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import yaml
from beamtrawl.pipeline.config.model import Config, build
from beamtrawl.pipeline.config.schema import crawl_file, sections_named
from beamtrawl.transforms.fields import FromEnvironment, Problem, explain
from pydantic import ValidationError

MAX_YAML_VALUES = 100_000  # values a file may expand to through its aliases (a "billion laughs" stops here)
MAX_FILE_CHARS = 10 * 1024**2  # a crawl file is a few kB; a device or a log given by mistake stops here
MAX_MESSAGE = 300  # characters of an error message: a value quoted in it is cut, however large


class ConfigError(Exception):
    """A configuration mistake; ``str()`` is the one-line message for the user. ``key`` is the key path
    it concerns (``whitelist[2].regex``) when there is one."""

    def __init__(self, message: str, key: str = "", problem: str = ""):
        super().__init__(message)
        self.key, self.problem = key, problem or message


def _error(source: str, key: str, problem: str) -> ConfigError:
    problem = _shown(problem)  # a quoted value may be as large as the file allows, and so may an unknown key
    return ConfigError(f"{source}: {_shown(key, 200)}: {problem}" if key else f"{source}: {problem}", key, problem)


_ENV_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_environment(value: Any, key: str = "") -> Any:
    """The file's one rule for the environment: in every string value (not keys), at any depth,
    ``${NAME}`` is the environment variable NAME, which must be set, and ``$${NAME}`` is the literal
    ``${NAME}``; ``${filename}`` is never the environment's: it is the external preparator's placeholder, as
    in regain's configurations. A value that is one whole ``${NAME}`` is a :class:`FromEnvironment`, which a
    number or a flag reads as YAML would. ``key`` is the path of ``value``, for errors."""
    if isinstance(value, dict):
        return {k: expand_environment(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_environment(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def variable(match: re.Match) -> str:
        escaped, name = match.groups()
        if escaped:
            return match.group(0)[1:]
        if name == "filename":  # the external preparator's placeholder
            return match.group(0)
        if name not in os.environ:
            raise Problem(key, f"environment variable {name} is not set (a literal ${{{name}}} is written "
                               f"$${{{name}}})")
        return os.environ[name]
    expanded = _ENV_REF.sub(variable, value)
    whole = _ENV_REF.fullmatch(value)
    return FromEnvironment(expanded) if whole and not whole.group(1) and expanded != value else expanded


def parse_config(raw: Any, source: str, crawling: bool = True) -> Config:
    """Check parsed YAML against the schema and build the crawl's configuration; ``source`` names the file
    in errors and anchors relative paths. ``crawling=False`` (searching) does not load the plugins, build
    the preparator instances (``preparators`` is empty) nor ask for files only a crawl opens (``imap.ca_file``)."""
    context = {"base": os.path.dirname(os.path.abspath(source)), "crawling": crawling}
    try:
        raw = expand_environment(raw)
        return build(crawl_file(sections_named(raw, crawling)).model_validate(raw, context=context), source, crawling)
    except ValidationError as err:
        key, problem = explain(err.errors(include_url=False)[0])
        raise _error(source, key.lstrip("."), problem) from None
    except Problem as err:
        raise _error(source, err.key, err.problem) from None


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what it would accept silently: a key given twice in one mapping (the
    last would win) and aliases that expand to more than :data:`MAX_YAML_VALUES` values."""

    def compose_document(self):
        node = super().compose_document()
        if _expanded_size(node, {}) > MAX_YAML_VALUES:
            raise yaml.YAMLError(f"aliases expand to more than {MAX_YAML_VALUES} values")
        return node

    def construct_set(self, node):
        raise yaml.MarkedYAMLError(problem="a set (!!set) has no order: write a list", problem_mark=node.start_mark)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<: *defaults" is overridden by the keys beside it, by design
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)):
                    continue
                if key in first_line:
                    raise yaml.MarkedYAMLError(problem=f"duplicate key {str(key)[:80]!r} (first at line "
                                                       f"{first_line[key]})", problem_mark=key_node.start_mark)
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _expanded_size(node, sizes: dict) -> int:
    """How many values ``node`` stands for once every alias in it is expanded (an alias shares its node,
    so each node is counted once and its size reused); a node that contains itself counts as too many."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_YAML_VALUES + 1  # while it is being counted: reaching it again is a cycle
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    sizes[id(node)] = min(size, MAX_YAML_VALUES + 1)
    return sizes[id(node)]


_Loader.add_constructor("tag:yaml.org,2002:set", _Loader.construct_set)


def _yaml_problem(err: yaml.YAMLError, text: str) -> str:
    """PyYAML's error as ``line L, column C: problem``: one line, whatever PyYAML's own text spans."""
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.reader.ReaderError):  # a control character: PyYAML says where on a second line
        line = text.count("\n", 0, err.position)
        return (f"line {line + 1}, column {err.position - text.rfind(chr(10), 0, err.position)}: "
                f"control character #x{err.character:04x} is not allowed (write it as an escape in double quotes)")
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return where + " ".join(str(getattr(err, "problem", None) or err).split())


def load_config(path: str, crawling: bool = True, overrides: Sequence[str] = ()) -> Config:
    """Read and validate the YAML file at ``path``; raises :class:`ConfigError` with a one-line message.
    ``overrides`` are ``--set key.path=value`` options, applied before validation; an error in a key one
    of them set names that option."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_FILE_CHARS + 1)
        if len(text) > MAX_FILE_CHARS:
            raise ConfigError(f"{path}: larger than {MAX_FILE_CHARS} characters: not a crawl file")
        raw = yaml.load(text, Loader=_Loader)
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                          f"{err.start})") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: {_yaml_problem(err, text)}"[:MAX_MESSAGE]) from None
    except RecursionError:
        raise ConfigError(f"{path}: lists or mappings nested too deeply") from None
    keys = [_override(raw, option) for option in overrides]
    try:
        return parse_config(raw, path, crawling)
    except ConfigError as err:
        for key, option in zip(keys, overrides, strict=True):
            if err.key == key or err.key.startswith((f"{key}.", f"{key}[")) or key.startswith(f"{err.key}."):
                raise ConfigError(f"--set {_shown(option, 200)}: {_shown(err.key, 200)}: {_shown(err.problem)}",
                                  err.key) from None
        raise


_KEY_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def _shown(option: str, limit: int = MAX_MESSAGE) -> str:
    option = option.replace("\n", "\\n")  # the message stays one line
    return option if len(option) <= limit else option[:limit] + "…"


def _override(raw: Any, option: str) -> str:
    """Apply one ``key.path=value`` to the parsed file: ``value`` is read as YAML (``true``, ``5``,
    ``[a, b]``), ``key.path`` names mappings by key and lists by ``[index]``. Returns the key path."""
    key, sep, text = option.partition("=")
    parts = [_KEY_PART.fullmatch(part) for part in key.strip().split(".")]
    if not sep or not all(parts):
        raise ConfigError(f"--set {_shown(option)}: expected KEY.PATH=VALUE, e.g. index.path=/srv/index.sqlite")
    steps: list[str | int] = []
    for part in parts:
        steps.append(part.group(1))
        steps.extend(int(n) for n in re.findall(r"\d+", part.group(2)))
    try:
        value = yaml.load(text, Loader=_Loader) if text.strip() else text
    except yaml.YAMLError as err:
        raise ConfigError(f"--set {_shown(option)}: the value is not YAML: {_yaml_problem(err, text)}") from None
    node, path = raw, ""
    for i, step in enumerate(steps):
        if isinstance(step, int):
            if not isinstance(node, list) or not 0 <= step < len(node):
                raise ConfigError(f"--set {_shown(option)}: {path} has no item [{step}]", path)
        elif not isinstance(node, dict):
            raise ConfigError(f"--set {_shown(option)}: {path or 'the file'} is not a mapping", path)
        if i == len(steps) - 1:
            node[step] = value
        else:
            if isinstance(step, str) and node.get(step) is None:
                node[step] = {}
            node = node[step]
        path = f"{path}[{step}]" if isinstance(step, int) else f"{path}.{step}" if path else step
    return path
