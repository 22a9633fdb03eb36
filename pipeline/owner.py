"""Which configuration an index belongs to, so that a second configuration does not crawl into it by accident.

Two configurations writing one index undo each other: each crawl deletes, as vanished, what the other found
(regain's users met it as "my index emptied itself"). An index therefore remembers the configuration that
filled it: the configuration file and the identity of its start URLs. A crawl is refused, before anything
is created or read, when both differ — the same file edited (a start URL added) and a copy of the file
elsewhere (the same start URLs) are the same configuration. ``crawl --force-other-config`` crawls anyway
and makes the new configuration the owner.
"""

from __future__ import annotations

import hashlib
import os

#: The option that says a crawl of another configuration into an index is intended.
FORCE_OPTION = "--force-other-config"


class OtherConfiguration(Exception):
    """The index was filled by another configuration; ``str()`` is the one line the user reads."""


def owner_of(config, starts: list[str]) -> dict:
    """What the index remembers of ``config``: its file and the identity of its start URLs."""
    return {"config": os.path.abspath(config.source), "starts": sorted(starts),
            "starts_id": hashlib.sha256("\n".join(sorted(starts)).encode()).hexdigest()[:16]}


def check_owner(stored: dict | None, current: dict, index_label: str) -> None:
    """Raise :class:`OtherConfiguration` if ``stored`` (the index's owner) is another configuration."""
    if not stored or stored.get("config") == current["config"] or stored.get("starts_id") == current["starts_id"]:
        return
    starts = stored.get("starts") or []
    shown = starts[0] + (f" and {len(starts) - 1} more" if len(starts) > 1 else "") if starts else "?"
    raise OtherConfiguration(
        f"{index_label} holds the crawl of {stored.get('config', 'another configuration')} (start {shown}): "
        f"give {os.path.basename(current['config'])} its own index.path, or add {FORCE_OPTION}")
