"""``beamtrawl crawl CONFIG`` and ``beamtrawl search QUERY --config CONFIG``.

Exit codes of ``crawl``: 0 clean, 1 some documents failed, 2 configuration error or fatal failure
(no deletes ran). Failures print one line; ``--debug`` adds tracebacks and what libraries log
(transforms/logs.py). A reader that closes the output early (``search … | head -1``) ends the
command quietly, with 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys

from pipeline import __version__
from pipeline.config import ConfigError, load_config
from pipeline.report import EXIT_FATAL, EXIT_OK, summary, terminal_safe
from transforms import logs

log = logging.getLogger("beamtrawl")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="beamtrawl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"beamtrawl {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    crawl = commands.add_parser("crawl", help="crawl the start URLs of CONFIG into its index",
                                description="Any further --option is passed to Beam as a pipeline option.")
    crawl.add_argument("config")
    crawl.add_argument("--runner", help="direct (default), or a Beam runner name")
    crawl.add_argument("--debug", action="store_true", help="tracebacks and Beam's own logs")

    search = commands.add_parser("search", help="search the index of CONFIG")
    search.add_argument("query")
    search.add_argument("--config", required=True)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="print a JSON array of hits")
    search.add_argument("--groups", default="", metavar="A,B",
                        help="the searcher's access groups; without them only public documents are found")
    search.add_argument("--debug", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args, extra = _parser().parse_known_args(argv)
    logs.route(args.debug)
    if args.command == "search" and extra:
        _parser().error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        config = load_config(args.config, load_plugins=args.command == "crawl")
        if args.command == "crawl":
            return _crawl(config, args.runner, extra)
        groups = [g.strip() for g in args.groups.split(",") if g.strip()]
        return _search(config, args.query, args.limit, args.json, groups)
    except ConfigError as err:
        log.error("%s", err)
        return EXIT_FATAL
    except BrokenPipeError:  # the reader went away (`beamtrawl search … | head -1`): nothing more to say
        _discard_stdout()
        return EXIT_OK
    except Exception as err:
        if args.debug:
            raise
        log.error("beamtrawl: %s", err)
        return EXIT_FATAL


def _crawl(config, runner: str | None, beam_args: list[str]) -> int:
    from pipeline.crawl import crawl  # Beam loads slowly: only when crawling
    from transforms.preparators.isolation import end_children

    # A command is no IPython session; without this, Beam imports IPython (0.6 s) to ask if it is one.
    sys.modules.setdefault("IPython", None)
    try:
        report = crawl(config, runner, beam_args)
    finally:
        end_children()  # those of an in-process runner; the command ends without Python's shutdown (run)
    print(summary(report))
    return report["exit_code"]


def _search(config, text: str, limit: int, as_json: bool, groups=()) -> int:
    from transforms.index import make_target
    from transforms.index.query import parse_query

    target = make_target(config.index)
    target.check()
    fields = [f.name for f in config.auxiliary_fields if f.index]
    hits = target.search(parse_query(text, fields, groups), limit)
    if as_json:
        print(json.dumps([hit.__dict__ for hit in hits], ensure_ascii=False, indent=2))
        return 0
    if not hits:
        print("no documents found")
    for n, hit in enumerate(hits, 1):
        print(f"{n}. {terminal_safe(hit.title)}\n   {terminal_safe(hit.url)}\n   {terminal_safe(hit.snippet)}\n")
    return 0


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so flushing what is left of it at exit fails no more."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run() -> None:
    """The ``beamtrawl`` command. It ends without Python's shutdown, which waits half a second for the idle
    threads of Beam and gRPC; everything a crawl writes is closed by then, and its preparing children ended."""
    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # e.g. `beamtrawl search … | head` closed the pipe
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
