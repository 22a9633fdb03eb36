"""Kept beside pyproject.toml because Beam ships code to remote workers with ``--setup_file ./setup.py``."""
from setuptools import setup

setup()
