"""The code's shape, kept as the issue that set it wanted (issue 17 §5): no function of the four packages takes
more than five arguments; a stage that needs more takes one frozen options value built once from the
configuration (``PrepareOptions``, ``DiscoverOptions``, ``Guard``, …)."""

import ast
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
