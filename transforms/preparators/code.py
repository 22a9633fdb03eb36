"""Source code: the full text, plus its structure from a tree-sitter parse, as regain's Java preparator
gave a class's structure. Title: the main type (Java's public class; elsewhere a top-level type named
after the file), Go's package, else the module (the file's stem, or its folder's for ``__init__.py``,
``mod.rs``, ``index.js``). Headlines: the types (``class Foo``, ``struct Bar``, ``impl Baz``) and the
functions and methods by qualified name (``Foo.parse``).

The language is the file's extension; the document must also be text (``CODE_MIME_TYPES``): a ``.ts``
that is an MPEG stream is not TypeScript. tree-sitter recovers from syntax errors, so a broken file
still yields the definitions it holds; when no parse is possible at all (a grammar that fails to
load, a parser error) the document is plain text. tree-sitter and the grammars load on first use:
a crawl that meets no source code never pays for them.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from collections.abc import Iterator

from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.text import decode_text
from beamtrawl.transforms.urls import file_name, name_extension, parent_path

log = logging.getLogger(__name__)

REVISION = 1  # part of the preparation fingerprint: raise it when what this preparator makes changes

# extension → (grammar module, its function returning the language)
_GRAMMARS = {
    "py": ("tree_sitter_python", "language"), "pyi": ("tree_sitter_python", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"), "h": ("tree_sitter_c", "language"),
    **dict.fromkeys(("cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "tcc"),
                    ("tree_sitter_cpp", "language")),
    **dict.fromkeys(("js", "mjs", "cjs", "jsx"), ("tree_sitter_javascript", "language")),
    "ts": ("tree_sitter_typescript", "language_typescript"), "mts": ("tree_sitter_typescript", "language_typescript"),
    "cts": ("tree_sitter_typescript", "language_typescript"), "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rs": ("tree_sitter_rust", "language"),
}
#: Which documents the preparator takes: its extensions, when the content is text (libmagic calls
#: JavaScript application/javascript, and Go, Rust or TypeScript often text/plain or text/x-c).
URL_PATTERN = re.compile(r"\.(" + "|".join(re.escape(e) for e in _GRAMMARS) + r")$", re.IGNORECASE)
CODE_MIME_TYPES = ("text/*", "application/javascript", "application/x-javascript", "application/ecmascript",
                   "application/typescript", "application/x-typescript")

# Definitions by node type: the kind word a type is shown with, "" for a function or method.
_C = {"function_definition": "", "struct_specifier": "struct", "union_specifier": "union",
      "enum_specifier": "enum"}
_JS = {"class_declaration": "class", "function_declaration": "", "generator_function_declaration": "",
       "method_definition": "", "variable_declarator": ""}
_DEFINITIONS = {
    "tree_sitter_python": {"class_definition": "class", "function_definition": ""},
    "tree_sitter_java": {"class_declaration": "class", "interface_declaration": "interface",
                         "enum_declaration": "enum", "record_declaration": "record",
                         "annotation_type_declaration": "@interface", "method_declaration": "",
                         "constructor_declaration": ""},
    "tree_sitter_c": _C,
    "tree_sitter_cpp": {**_C, "class_specifier": "class", "namespace_definition": "namespace"},
    "tree_sitter_javascript": _JS,
    "tree_sitter_typescript": {**_JS, "abstract_class_declaration": "class", "interface_declaration": "interface",
                               "enum_declaration": "enum", "type_alias_declaration": "type",
                               "internal_module": "namespace", "method_signature": "",
                               "abstract_method_signature": "", "function_signature": ""},
    "tree_sitter_go": {"function_declaration": "", "method_declaration": "", "type_spec": "type"},
    "tree_sitter_rust": {"function_item": "", "function_signature_item": "", "struct_item": "struct",
                         "enum_item": "enum", "union_item": "union", "trait_item": "trait", "impl_item": "impl",
                         "mod_item": "mod"},
}
_GO_KINDS = {"struct_type": "struct", "interface_type": "interface"}
_JS_FUNCTIONS = ("arrow_function", "function_expression", "function", "generator_function")
_MODULE_FILES = {"__init__", "mod", "lib", "main", "index"}  # named after their folder (Rust's: above src/)
_C_TYPES = {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
_C_NAMES = {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name",
            "operator_cast", "template_function"}
MAX_HEADLINES = 2000  # a generated file may define tens of thousands; the content keeps them all
# Larger files (amalgamations, minified bundles, generated tables: a 3.6 MB searchindex.js parsed for 12 s)
# are plain text: the content is whole, only the structure is not sought.
MAX_PARSE_BYTES = 512 * 1024


@functools.cache
def _parser_and_query(module: str, function: str):
    """The grammar's parser, and a query for its definition nodes (matched in C: a walk over every node
    in Python took as long as the parse)."""
    import tree_sitter

    language = tree_sitter.Language(getattr(importlib.import_module(module), function)())
    query = tree_sitter.Query(language, " ".join(f"({kind}) @definition" for kind in _DEFINITIONS[module]))
    return tree_sitter.Parser(language), query


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _c_name(node) -> str:
    """A C/C++ function's name: follow the declarator (pointer, reference, function) to the name."""
    declarator = node.child_by_field_name("declarator")
    while (declarator is not None and declarator.type not in _C_NAMES
           and declarator.child_by_field_name("declarator") is not None):
        declarator = declarator.child_by_field_name("declarator")
    return _text(declarator)


def _go_receiver(node) -> str:
    receiver = node.child_by_field_name("receiver")
    types = [n for n in (receiver.named_children if receiver else ()) if n.type == "parameter_declaration"]
    kind = types[0].child_by_field_name("type") if types else None
    while kind is not None and kind.type in ("pointer_type", "generic_type"):
        kind = kind.named_children[0] if kind.named_children else None
    return _text(kind)


def _definition(node, module: str) -> tuple[str, str] | None:
    """(kind, name) of a definition node, or None for any other node."""
    kind = _DEFINITIONS[module].get(node.type)
    if kind is None:
        return None
    if node.type == "function_definition" and module in ("tree_sitter_c", "tree_sitter_cpp"):
        return kind, _c_name(node).replace("::", ".")
    if node.type in _C_TYPES and node.child_by_field_name("body") is None:  # a use of the type, not its definition
        return None
    if node.type == "variable_declarator":  # const parse = (…) => …
        value = node.child_by_field_name("value")
        if value is None or value.type not in _JS_FUNCTIONS:
            return None
    if node.type == "method_declaration" and module == "tree_sitter_go":
        receiver = _go_receiver(node)
        name = _text(node.child_by_field_name("name"))
        return kind, f"{receiver}.{name}" if receiver else name
    if node.type == "type_spec":
        kind = _GO_KINDS.get(getattr(node.child_by_field_name("type"), "type", ""), "type")
    if node.type == "impl_item":
        trait, target = node.child_by_field_name("trait"), _text(node.child_by_field_name("type"))
        return kind, f"{_text(trait)} for {target}" if trait is not None else target
    name = _text(node.child_by_field_name("name"))
    return (kind, name) if name else None


def _owner(kind: str, name: str) -> str:
    """The name a definition gives what it holds: an impl's functions belong to the type it names
    (Either.fmt, not "Display for Either<L, R>".fmt)."""
    return re.sub(r"<.*>", "", name.rsplit(" for ", 1)[-1]) if kind == "impl" else name


def _definitions(root, module: str, query) -> Iterator[tuple[str, str, int]]:
    """(kind, qualified name, nesting depth) of every definition in the tree, in source order."""
    from tree_sitter import QueryCursor

    nodes = sorted(QueryCursor(query).captures(root).get("definition", []), key=lambda n: n.start_byte)
    found = {node.id: definition for node in nodes if (definition := _definition(node, module)) is not None}
    scopes: dict[int, list[str]] = {}
    enclosing: list[tuple[int, str]] = []  # (end byte, owner) of the definitions around: a node holds its descendants' bytes
    for node in sorted((n for n in nodes if n.id in found), key=lambda n: (n.start_byte, -n.end_byte)):
        while enclosing and enclosing[-1][0] < node.end_byte:
            enclosing.pop()
        scopes[node.id] = [owner for _, owner in enclosing]
        enclosing.append((node.end_byte, _owner(*found[node.id])))
    for node in nodes:
        if node.id in found:
            kind, name = found[node.id]
            yield kind, ".".join((*scopes[node.id], name)), len(scopes[node.id])


def _module_name(url: str) -> str:
    """The file's name before its first dot (``tslib.d.ts`` → tslib), or its folder's for the files that
    stand for their folder (``json/__init__.py`` → json, ``either/src/lib.rs`` → either)."""
    name = file_name(url)
    stem = name.split(".", 1)[0] or name
    if stem not in _MODULE_FILES:
        return stem
    folders = [f for f in parent_path(url).split("/")[1:] if f]  # the first is the host
    while folders and folders[-1] == "src":
        folders.pop()
    return folders[-1] if folders else stem


def _squash(name: str) -> str:
    """A name as the file stem would spell it: JSONDecoder ~ json_decoder."""
    return re.sub(r"[_\-.]", "", name).lower()


def _title(root, module: str, definitions: list[tuple[str, str, int]], url: str) -> str:
    types = [(kind, name) for kind, name, depth in definitions if kind and depth == 0]
    if module == "tree_sitter_go":
        package = next((c for c in root.named_children if c.type == "package_clause"), None)
        if package is not None and package.named_children:
            return f"package {_text(package.named_children[0])}"
    if module == "tree_sitter_java":
        public = [c for c in root.named_children if c.type in _DEFINITIONS[module] and
                  any("public" in _text(m).split() for m in c.named_children if m.type == "modifiers")]
        main = _definition(public[0], module) if public else None
        if main is not None:
            return f"{main[0]} {main[1]}"
    stem = _module_name(url)
    main_type = next((f"{kind} {name}" for kind, name in types if _squash(name) == _squash(stem)), None)
    if main_type is None and module == "tree_sitter_java" and types:
        main_type = "{} {}".format(*types[0])
    return main_type or f"module {stem}"


def prepare_code(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = decode_text(data)
    grammar = _GRAMMARS.get(name_extension(file_name(url)))
    if grammar is None or len(data) > MAX_PARSE_BYTES:
        return Prepared(content=text)
    try:
        source = data if text.encode("utf-8", "surrogatepass") == data else text.encode("utf-8", "replace")
        parser, query = _parser_and_query(*grammar)
        root = parser.parse(source).root_node
        definitions = list(_definitions(root, grammar[0], query))
        title = _title(root, grammar[0], definitions, url)
    except Exception as err:  # noqa: BLE001 - a grammar that will not load or a parser bug: the text stays
        log.debug("%s: not parsed as %s: %s", url, grammar[0], err)
        return Prepared(content=text)
    headlines = [f"{kind} {name}" if kind else name for kind, name, _ in definitions[:MAX_HEADLINES]]
    return Prepared(title=title, content=text, headlines=headlines)
