"""Kept beside pyproject.toml because Beam ships code to remote workers with ``--setup_file ./setup.py``.

The repository keeps pipeline/, transforms/, plugins/ and runners/ at the top; they install as
beamtrawl.pipeline, beamtrawl.transforms, ... (the mapping is ``package-dir`` in pyproject.toml)."""
from setuptools import find_packages, setup

ROOTS = ("pipeline", "transforms", "plugins", "runners")

setup(packages=[f"beamtrawl.{name}" for root in ROOTS
                for name in [root, *(f"{root}.{sub}" for sub in find_packages(root))]])
