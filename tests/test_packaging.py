"""beamtrawl installs under one name (issue 17 §4): the package Beam stages for remote workers
(``--setup_file``: an sdist built from setup.py) installs as ``beamtrawl.*`` and crawls in an
environment where another distribution owns the top-level names ``pipeline``, ``transforms``,
``plugins`` and ``runners``."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from apache_beam.runners.portability.stager import Stager

REPO = Path(__file__).resolve().parent.parent


def run(*command, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=600, **kwargs)


def test_the_staged_package_crawls_beside_a_distribution_owning_the_same_top_level_names(tmp_path):
    sdist = Stager._build_setup_package(str(REPO / "setup.py"), str(tmp_path))
    env = tmp_path / "env"
    assert run(sys.executable, "-m", "venv", "--without-pip", str(env)).returncode == 0
    python = env / "bin" / "python"
    purelib = Path(run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                   .stdout.strip())
    # Beam and the other dependencies come from this environment; its editable beamtrawl does not,
    # because paths named in a .pth file are added without processing the .pth files inside them.
    dependencies = [p for p in [*site.getsitepackages(), sysconfig.get_path("purelib")] if Path(p).is_dir()]
    (purelib / "dependencies.pth").write_text("\n".join(dict.fromkeys(dependencies)) + "\n")
    for package in (sdist, str(REPO / "tests" / "data" / "squatter")):
        done = run(str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", package)
        assert done.returncode == 0, done.stderr

    where = run(str(python), "-P", "-c", "import beamtrawl.pipeline.cli as m; print(m.__file__)", cwd=tmp_path)
    assert where.stdout.startswith(str(purelib)), where.stdout + where.stderr
    squatter = run(str(python), "-P", "-c", "import pipeline", cwd=tmp_path)
    assert "the squatter's top-level pipeline was imported" in squatter.stderr

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "note.txt").write_text("The wombat staged its package beside a squatter.\n")
    config = tmp_path / "crawl.yaml"
    config.write_text(f'start: [{{url: "file://{tree}", parse: true, index: false}}]\n'
                      f'whitelist: [{{prefix: "file://{tree}"}}]\n'
                      f'index: {{path: "{tmp_path / "index.sqlite"}"}}\n')
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    beamtrawl = env / "bin" / "beamtrawl"
    done = run(str(beamtrawl), "crawl", str(config), "--direct_num_workers=2", cwd=tmp_path, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    found = run(str(beamtrawl), "search", "wombat", "--config", str(config), cwd=tmp_path, env=environment)
    assert "note.txt" in found.stdout, found.stdout + found.stderr
