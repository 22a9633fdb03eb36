"""The configuration reference, generated from the schema so docs and code cannot drift:
``python -m beamtrawl.pipeline.config.reference > docs/configuration-reference.md``
(tests/test_config_schema.py checks the committed file equals what this prints). With ``--json-schema``
it prints the JSON Schema instead, for editors that check YAML against one."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap

from beamtrawl.pipeline.config.schema import crawl_file
from beamtrawl.transforms import embed
from beamtrawl.transforms import index as targets
from beamtrawl.transforms.fields import Section
from beamtrawl.transforms.registry import RegistryError
from beamtrawl.transforms.sources import settings_sources

_FORMATS = {"size": "size", "regex": "regex", "url": "URL or path", "path": "path"}
_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤"}


_JSON_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def _spelled(node):
    """A bound on a number that reads an environment value first (``Count``) is kept by pydantic under its own
    name (``ge``): JSON Schema's is ``minimum``."""
    if isinstance(node, dict):
        return {_JSON_BOUNDS.get(k, k) if not isinstance(v, (dict, list)) else k: _spelled(v) for k, v in node.items()}
    return [_spelled(v) for v in node] if isinstance(node, list) else node


def index_kinds() -> dict[str, type[Section]]:
    """Every index target's section model by kind, entry points' included."""
    return _registered(targets.REGISTRY, targets.settings_model)


def embedding_models() -> dict[str, type[Section]]:
    """Every embedding model's section model by name, entry points' included."""
    return _registered(embed.REGISTRY, embed.settings_model)


def _registered(registry, settings_model) -> dict[str, type[Section]]:
    """Each name of ``registry`` → its section model (a broken extension is left out: the registry warned, and a
    file naming it gets the error)."""
    found = {}
    for name in registry.names():
        try:
            found[name] = settings_model(name)
        except RegistryError:
            continue
    return found


def json_schema() -> dict:
    """The file's JSON Schema, with the section of every registered source that has settings and ``index`` as
    one of its kinds' mappings."""
    schema = _spelled(crawl_file(frozenset(settings_sources())).model_json_schema())
    kinds = [_spelled(model.model_json_schema()) for model in index_kinds().values()]
    for kind in kinds:
        schema.setdefault("$defs", {}).update(kind.pop("$defs", {}))
    schema["properties"]["index"] = {"anyOf": kinds, "description": schema["properties"]["index"].get("description", "")}
    models = [_spelled(model.model_json_schema()) for model in embedding_models().values()]
    schema["properties"]["embeddings"] = {"anyOf": [*models, {"type": "boolean", "const": False}, {"type": "null"}],
                                          "description": schema["properties"]["embeddings"].get("description", "")}
    return schema


def _number(value: float) -> str:
    return f"{value:,}".replace(",", " ") if float(value).is_integer() else f"{value:g}"


def _type(prop: dict, defs: dict) -> str:
    """One property's type in words: ``integer ≥ 1``, ``list of regex``, ``size``, ``english, german``."""
    if "$ref" in prop:
        return "mapping"
    if "anyOf" in prop:
        kinds = [_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(kinds) + (" or nothing" if len(kinds) < len(prop["anyOf"]) else "")
    if "enum" in prop or "const" in prop:
        return " or ".join(map(str, prop.get("enum", [prop.get("const")])))
    if prop.get("format") in _FORMATS:
        return _FORMATS[prop["format"]]
    kind = prop.get("format") if prop.get("format") == "seconds" else prop.get("type", "any")
    if kind == "array":
        items = prop.get("items", {})
        return "list of mappings" if "$ref" in items else f"list of {_type(items, defs)}"
    if kind == "object":
        return "mapping"
    words = {"seconds": "seconds", "integer": "integer", "number": "number", "string": "string", "boolean": "true or false"}
    if "minimum" in prop and "maximum" in prop:
        return f"{words.get(kind, kind)} from {_number(prop['minimum'])} to {_number(prop['maximum'])}"
    if "exclusiveMinimum" in prop and "maximum" in prop:
        return f"{words.get(kind, kind)} > {_number(prop['exclusiveMinimum'])}, at most {_number(prop['maximum'])}"
    bounds = " ".join(f"{sign} {_number(prop[key])}" for key, sign in _BOUNDS.items() if key in prop)
    return f"{words.get(kind, kind)} {bounds}".strip()


def _default(name: str, prop: dict, required: list) -> str:
    if name in required:
        return "required"
    if "default_words" in prop:  # a default that is not a value a user could write (whitelist: the starts)
        return prop["default_words"]
    if "$ref" in prop or prop.get("type") == "object":  # a section or a mapping: empty, each key its default
        return "`{}`"
    if "default" not in prop:
        return ""
    value = prop["default"]
    if prop.get("format") == "size" and value % 1024**2 == 0:
        return f"`{value // 1024**2} MiB`"
    return "nothing" if value is None else f"`{json.dumps(value, ensure_ascii=False)}`"


def sections() -> dict[str, type[Section]]:
    """Every section of the schema by class name (the names JSON Schema's ``$defs`` use)."""
    found, todo = {}, [Section]
    while todo:
        for section in todo.pop().__subclasses__():
            found[section.__name__] = section
            todo.append(section)
    return found


def field_docs(model: type[Section]) -> dict[str, str]:
    """The docstring under each field of ``model`` (and of the sections it extends), as one line."""
    docs = {}
    for cls in reversed([c for c in model.__mro__ if issubclass(c, Section) and c is not Section]):
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
        except (OSError, TypeError):  # a model made at run time (the file with its sources' sections)
            continue
        for field, text in itertools.pairwise(body):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(text, ast.Expr) and isinstance(text.value, ast.Constant)):
                docs[field.target.id] = " ".join(text.value.value.split())
    return {field.alias or name: docs.get(name) or field.description or "" for name, field in model.model_fields.items()}


def _rows(schema: dict, defs: dict, prefix: str, docs: dict) -> tuple[list[str], list[tuple[str, dict]]]:
    """The table rows of one mapping, and the mappings below it (key path, schema) for their own tables."""
    rows, below = [], []
    required = schema.get("required", [])
    for name, prop in schema["properties"].items():
        key = f"{prefix}{name}"
        line = docs.get(name, "").replace("|", "\\|")
        rows.append(f"| `{key}` | {_type(prop, defs)} | {_default(name, prop, required)} | {line} |")
        for ref in (prop, prop.get("items", {}), *prop.get("anyOf", ()), *(p.get("items", {}) for p in prop.get("anyOf", ()))):
            if "$ref" in ref:
                below.append((key + ("[]" if ref is not prop and "items" in str(prop) else ""),
                              defs[ref["$ref"].rsplit("/", 1)[1]]))
                break
    return rows, below


def _tables(schema: dict, models: dict, prefix: str = "", heading: str = "") -> list[str]:
    """The tables of one mapping and of every mapping below it, each under its key path."""
    out, defs = [], schema.get("$defs", {})
    todo = [(prefix, schema)]
    while todo:
        prefix, section = todo.pop(0)
        docs = field_docs(models[section.get("title", "CrawlFile")])
        rows, below = _rows(section, defs, f"{prefix}." if prefix else "", docs)
        title = f"`{prefix}`{heading if prefix and not out else ''}" if prefix else "Top level"
        out += [f"## {title}", "", section.get("description", "").strip(), "",
                "| key | type | default | meaning |", "|---|---|---|---|", *rows, ""]
        todo += below
    return out


def reference() -> str:
    schema = _spelled(crawl_file(frozenset(settings_sources())).model_json_schema())
    out = ["# Configuration reference", "",
           ("Generated from the schema (`pipeline/config/schema.py`) and the settings every registered source and "
            "index target and embedding model declares (its `Settings`) by "
            "`python -m beamtrawl.pipeline.config.reference > docs/configuration-reference.md`; do not edit."),
           ("A key path `a.b` is key `b` of mapping `a`; `a[].b` is key `b` of each item of list `a`. "
            "`${NAME}` in any string value, at any depth (parameters included, keys not), is the environment "
            "variable NAME, which must be set; `$${NAME}` is a literal `${NAME}`; a value that is one whole `${NAME}` "
            "is read as a number or true/false where the key wants one. "
            "Relative paths are relative to the configuration file; "
            "a size is bytes or a string such as `10 MiB` or `2GB`. Unknown keys are errors."), ""]
    kinds = index_kinds()
    models = sections()  # once every source and target is imported
    out += _tables(schema, models)
    for kind, model in kinds.items():
        out += _tables(_spelled(model.model_json_schema()), models, "index", f" (kind: {kind})")
    for name, model in embedding_models().items():
        out += _tables(_spelled(model.model_json_schema()), models, "embeddings", f" (model: {name})")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    print(json.dumps(json_schema(), indent=2) if "--json-schema" in sys.argv[1:] else reference(),
          end="")
