"""The configuration reference, generated from the schema so docs and code cannot drift:
``python -m beamtrawl.pipeline.config.reference > docs/configuration-reference.md``
(tests/test_config_schema.py checks the committed file equals what this prints)."""

from __future__ import annotations

import json

from beamtrawl.pipeline.config.schema import CrawlFile

_FORMATS = {"size": "size", "regex": "regex", "url": "URL or path", "path": "path"}
_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤"}


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
    bounds = " ".join(f"{sign} {_number(prop[key])}" for key, sign in _BOUNDS.items() if key in prop)
    return f"{words.get(kind, kind)} {bounds}".strip()


def _default(name: str, prop: dict, required: list) -> str:
    if name in required:
        return "required"
    if "default" not in prop or "$ref" in prop:
        return ""
    value = prop["default"]
    if prop.get("format") == "size" and value % 1024**2 == 0:
        return f"`{value // 1024**2} MiB`"
    return "nothing" if value is None else f"`{json.dumps(value, ensure_ascii=False)}`"


def _rows(schema: dict, defs: dict, prefix: str) -> tuple[list[str], list[tuple[str, dict]]]:
    """The table rows of one mapping, and the mappings below it (key path, schema) for their own tables."""
    rows, below = [], []
    required = schema.get("required", [])
    for name, prop in schema["properties"].items():
        key = f"{prefix}{name}"
        line = (prop.get("description") or "").replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{key}` | {_type(prop, defs)} | {_default(name, prop, required)} | {line} |")
        for ref in (prop, prop.get("items", {}), *prop.get("anyOf", ()), *(p.get("items", {}) for p in prop.get("anyOf", ()))):
            if "$ref" in ref:
                below.append((key + ("[]" if ref is not prop and "items" in str(prop) else ""),
                              defs[ref["$ref"].rsplit("/", 1)[1]]))
                break
    return rows, below


def reference() -> str:
    schema = CrawlFile.model_json_schema()
    defs = schema.get("$defs", {})
    out = ["# Configuration reference", "",
           ("Generated from the schema (`pipeline/config/schema.py`) by "
            "`python -m beamtrawl.pipeline.config.reference > docs/configuration-reference.md`; do not edit."),
           ("A key path `a.b` is key `b` of mapping `a`; `a[].b` is key `b` of each item of list `a`. "
            "Strings may hold `${ENV_VAR}`; relative paths are relative to the configuration file; "
            "a size is bytes or a string such as `10 MiB` or `2GB`. Unknown keys are errors."), ""]
    todo = [("", schema)]
    while todo:
        prefix, section = todo.pop(0)
        rows, below = _rows(section, defs, f"{prefix}." if prefix else "")
        out += [f"## `{prefix}`" if prefix else "## Top level", "", section.get("description", "").strip(), "",
                "| key | type | default | meaning |", "|---|---|---|---|", *rows, ""]
        todo += below
    return "\n".join(out)


if __name__ == "__main__":
    print(reference(), end="")
