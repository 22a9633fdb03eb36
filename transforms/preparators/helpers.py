"""Programs some preparators need (mandoc for man pages), and what their absence costs.

A preparator's module lists its programs in ``HELPERS``, or names them by its parameters with
``helpers_needed(params)`` (OCR's tesseract, unless ``ocr: {enabled: false}``). A program that is not installed makes its
preparator fail with :func:`Helper.missing`'s reason (so the next preparator by priority reads the
document, e.g. the text preparator the roff source), and the crawl's summary carries one warning per
missing program naming its Debian package and the number of documents prepared without it
(:func:`warnings`). Each program's presence and identity (its path, size and modification time: a new
version is a new file) belong to the preparation fingerprint (:func:`fingerprint`), so the first crawl
after it is installed or upgraded prepares the documents again.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import NamedTuple


class Helper(NamedTuple):
    program: str
    package: str  # the Debian package that provides it (the README's install commands install it)
    what: str  # the documents it reads, in words, for the warning

    def missing(self) -> str:
        """The preparation error of a document whose preparator needs this program and finds it missing."""
        return f"{self.program} is not installed (Debian package {self.package})"

    def installed(self) -> bool:
        return shutil.which(self.program) is not None


def helpers_of(preparators) -> list[Helper]:
    """The programs the given preparator instances need, each once, in order."""
    found: dict[str, Helper] = {}
    for spec in preparators:
        module = sys.modules.get(spec.func.__module__)
        needed = getattr(module, "helpers_needed", None)
        for helper in needed(dict(spec.params)) if needed else getattr(module, "HELPERS", ()):
            found.setdefault(helper.program, helper)
    return list(found.values())


def _identity(helper: Helper) -> str:
    path = shutil.which(helper.program)
    if path is None:
        return "missing"
    stat = os.stat(path)
    return f"{os.path.realpath(path)}:{stat.st_size}:{stat.st_mtime_ns}"


def fingerprint(preparators) -> dict[str, str]:
    """{program: its identity, or "missing"}: part of the preparation fingerprint."""
    return {helper.program: _identity(helper) for helper in helpers_of(preparators)}


def warnings(preparators, problems: list[dict]) -> list[str]:
    """One line per missing program: its package, and how many documents were prepared without it."""
    lines = []
    for helper in helpers_of(preparators):
        if helper.installed():
            continue
        reason = helper.missing()
        count = sum(1 for p in problems if reason in p.get("reason", ""))
        lines.append(f"{reason}: {count} {helper.what} prepared without it; the first crawl after it is "
                     "installed prepares them again")
    return lines
