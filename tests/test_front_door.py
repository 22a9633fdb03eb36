"""The README's two commands as a newcomer meets them: a fresh clone and the system's own Python only.

Debian's /usr/bin/python3 refuses ``pip install`` outside a virtual environment (PEP 668); both scripts
create and reuse ``.venv``. Packages come from the wheelhouse tests/run.sh made, with no index: the test
reaches no registry.
"""

import os
import subprocess
from pathlib import Path

from tests.package_files import wheelhouse

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**SYSTEM_ENV, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse())}
    return subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_demo_and_test_command_work_from_a_fresh_clone_with_the_system_python(tmp_path):
    clone = tmp_path / "beamtrawl"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)

    demo = _run(["examples/demo.sh"], clone)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "does not provide the extra" not in demo.stderr, demo.stderr[:2000]  # pip's warning about lxml (issue 28)
    assert "Spectrometer Calibration" in demo.stdout
    venv_python = (clone / ".venv/bin/python").resolve()
    assert str(venv_python).startswith("/usr/bin/"), venv_python  # the system's Python, in .venv

    search = _run([".venv/bin/beamtrawl", "search", "sourdough", "--config", "examples/crawl.yaml"], clone)
    assert search.returncode == 0 and "sourdough" in search.stdout.lower(), search.stderr

    tests = _run(["tests/run.sh", "--collect-only", "-q", "tests/test_start_up.py"], clone)  # reuses .venv
    assert tests.returncode == 0, tests.stdout[-2000:] + tests.stderr[-2000:]
    assert "tests collected" in tests.stdout
