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
