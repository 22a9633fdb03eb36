"""Reading and defaulting Beam pipeline options given as command-line arguments."""

from __future__ import annotations


class RunnerError(Exception):
    """The runner cannot run this crawl as asked; the message says why, in one line."""


def option(args: list[str], name: str) -> str | None:
    """The value of ``--name=value`` or ``--name value`` in ``args`` (the last one wins, as in Beam)."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
    return value


def with_defaults(args: list[str], **defaults: str) -> list[str]:
    """Defaults first, so what the user gave wins."""
    return [*(f"--{name}={value}" for name, value in defaults.items()), *args]
