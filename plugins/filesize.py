"""regain's FilesizeFilterPlugin: reject local files smaller or larger than configured sizes.

It acts in ``check_dynamic_blacklist`` and only on regular ``file://`` files (folders and other
schemes pass), so a rejected file is neither read nor indexed and, if it was indexed before, is
deleted as vanished once its folder was listed completely. Unlike ``max_file_size`` (which still
indexes an over-size file by its metadata) this keeps the file out of the index altogether.

Params: ``min_bytes`` (default 0: no minimum; regain's shipped configuration used 1 to skip empty
files) and ``max_bytes`` (default none: no maximum).
"""

from __future__ import annotations

import os
import stat

from beamtrawl.plugins.hookspecs import hookimpl
from beamtrawl.transforms.sources import local_path


def _size(value, name: str, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a number of bytes (0 or more), got {value!r}")
    return value


class FilesizeFilter:
    def __init__(self, min_bytes: int = 0, max_bytes: int | None = None):
        self.min_bytes = _size(min_bytes, "min_bytes", allow_none=False)
        self.max_bytes = _size(max_bytes, "max_bytes", allow_none=True)
        if self.max_bytes is not None and self.max_bytes < self.min_bytes:
            raise ValueError(f"max_bytes ({self.max_bytes}) is smaller than min_bytes ({self.min_bytes})")

    @hookimpl
    def check_dynamic_blacklist(self, url: str) -> bool:
        path = local_path(url)
        if path is None:
            return False
        try:
            st = os.stat(path)
        except OSError:  # the source reports unreadable files itself
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        return st.st_size < self.min_bytes or (self.max_bytes is not None and st.st_size > self.max_bytes)
