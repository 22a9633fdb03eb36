"""The code's shape, kept as the issue that set it wanted (issue 17 §5): no function of the four packages takes
more than five arguments; a stage that needs more takes one frozen options value built once from the
configuration (``PrepareOptions``, ``DiscoverOptions``, ``Guard``, …)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "transforms", "plugins", "runners")
MAX_ARGUMENTS = 5


def _arguments(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    """Every argument, keyword-only ones included; ``*args`` and ``**kwargs`` one each; not ``self``/``cls``."""
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    own = len(names) - (1 if names and names[0] in ("self", "cls") else 0)
    return own + (args.vararg is not None) + (args.kwarg is not None)


def test_no_function_in_the_four_packages_takes_more_than_five_arguments():
    wide = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and _arguments(node) > MAX_ARGUMENTS:
                    wide.append(f"{path.relative_to(ROOT)}:{node.lineno} {getattr(node, 'name', 'lambda')}")
    assert wide == [], f"functions with more than {MAX_ARGUMENTS} arguments: {wide}"


def _format_libraries() -> set[str]:
    """The third-party packages the preparators import at their top level (pypdf, openpyxl, …)."""
    found = set()
    for module in (ROOT / "transforms" / "preparators").rglob("*.py"):
        for node in ast.parse(module.read_text()).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            found.update(name.split(".")[0] for name in names)
    return {name for name in found - set(sys.stdlib_module_names) if name not in ("beamtrawl", "__future__")}


def test_the_start_of_a_command_imports_no_format_library():
    """issue 29: a search or a configuration check pays for no PDF or spreadsheet library; the preparators'
    table is read only by a crawl."""
    libraries = _format_libraries()
    assert {"lxml", "olefile", "mutagen"} <= libraries, libraries
    probe = ("import sys, beamtrawl.pipeline.cli, beamtrawl.pipeline.config, beamtrawl.transforms.index; "
             "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                text=True).stdout.split())
    assert not loaded & libraries, sorted(loaded & libraries)


MAX_LINES = 60


def test_no_function_in_the_four_packages_is_over_sixty_lines():
    """issue 29: a function a reader takes in at once; a longer one is split where its steps are."""
    long = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.end_lineno - node.lineno + 1 > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                f"{node.end_lineno - node.lineno + 1}")
    assert long == [], f"functions over {MAX_LINES} lines: {long}"


#: Literals left outside transforms/sources/ that look like a scheme but name none of a source's URLs (issue 29
#: moved every scheme's knowledge into its source: capabilities, ``default_ports``, ``inside_marks``, the
#: registry's LOCAL scheme that plain paths become): SQLite's and delta-rs's URIs of the index's own files, a word,
#: ASGI's protocol name.
SCHEME_LITERALS_LEFT = {
    "transforms/index/sqlite.py": {"file:"}, "transforms/index/table.py": {"file://"},  # their own files' URIs
    "pipeline/report.py": {"file"},  # the word, plural(n, "file")
    "pipeline/serve/app.py": {"http"}, "pipeline/serve/middleware.py": {"http"},  # ASGI's protocol name
    "runners/dataflow.py": {"gs://"},  # Dataflow's own rule for its temp_location, not a source's
    "runners/beam_import.py": {"gs"},  # Beam's own file system, imported when Beam is first asked for its scheme
    # the Delta table's storage (delta-rs's and pyarrow's file systems), not a source
    "transforms/index/table_store.py": {"az", "abfs", "abfss", "file", "gs", "http://", "https", "s3"},
    "transforms/preparators/onenote.py": {"file"},  # the word: an inserted file's member name, file1, file2…
}


def _scheme_literals(path: Path, schemes: tuple[str, ...]) -> set[str]:
    """String constants of ``path`` that name a scheme: the scheme itself, ``scheme:`` or ``scheme://`` (a URL
    with more after it, such as an XML namespace, names a resource, not a source); docstrings aside."""
    pattern = re.compile(rf"({'|'.join(schemes)})(:(//)?)?", re.IGNORECASE)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and pattern.fullmatch(node.value)}


#: The modules of transforms/sources/ that are no one source's: the contract, the settings, the shared walk.
SHARED_SOURCE_MODULES = {"base", "settings", "walk"}


def _source_modules_imported(path: Path) -> set[str]:
    """The modules of one source (``beamtrawl.transforms.sources.http.crawl``…) that ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        names.update(m for m in modules if m.startswith("beamtrawl.transforms.sources.")
                     and m.split(".")[3] not in SHARED_SOURCE_MODULES)
    return names


def test_no_module_outside_the_sources_names_a_scheme():
    """issue 29: "nothing else in beamtrawl names a scheme" (docs/sources.md): dry-run, document delivery, the
    starter file, URL acceptance and the schema ask the Source protocol's capabilities instead — neither by a
    scheme literal nor by importing one source's module."""
    from beamtrawl.transforms.sources import BUILTIN

    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if not where.startswith("transforms/sources/"):
                named = _scheme_literals(path, tuple(BUILTIN)) - SCHEME_LITERALS_LEFT.get(where, set())
                named |= _source_modules_imported(path)
                if named:
                    found[where] = sorted(named)
    assert found == {}
