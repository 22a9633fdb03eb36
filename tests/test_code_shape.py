"""The code's shape, kept as the issue that set it wanted (issue 17 §5): no function of the four packages takes
more than five arguments; a stage that needs more takes one frozen options value built once from the
configuration (``PrepareOptions``, ``DiscoverOptions``, ``Guard``, …)."""

import ast
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
