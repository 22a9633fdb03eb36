"""Real servers that the test suite installs and starts itself (see each module's docstring)."""

from __future__ import annotations

import os
import shutil


def require(*programs: str) -> None:
    """Fail (never skip) when a server cannot run here: tests/run.sh installs these and CI runs as root,
    so a missing one is a broken set-up, not a reason to prove nothing."""
    missing = [p for p in programs if not (os.access(p, os.X_OK) if "/" in p else shutil.which(p))]
    if missing or os.geteuid() != 0:
        raise RuntimeError(f"these tests need root and {', '.join(programs)} "
                           "(tests/run.sh installs them; run it as root)")


def refuse_fetch_in_tests(what: str, command: str) -> None:
    """Tests never reach a registry: tests/run.sh fetches everything before pytest starts. Called where a
    server module would fetch ``what``; inside a test it fails with the command that fetches it."""
    if "PYTEST_CURRENT_TEST" in os.environ:
        raise RuntimeError(f"{what} is not fetched: run {command} (tests/run.sh does)")
