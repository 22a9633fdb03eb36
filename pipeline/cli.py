"""``beamtrawl crawl CONFIG`` and ``beamtrawl search QUERY --config CONFIG``.

``beamtrawl export CONFIG DEST`` writes any index as a Delta table; ``beamtrawl maintain CONFIG`` compacts a
Delta table and removes old versions (docs/table.md).

Exit codes of ``crawl``: 0 clean, 1 some documents failed, 2 configuration error or fatal failure
(no deletes ran). Failures print one line; ``--debug`` adds tracebacks and what libraries log
(transforms/logs.py). A reader that closes the output early (``search … | head -1``) ends the
command quietly, with 0.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import json
import logging
import os
import shlex
import sys
import time

from beamtrawl.pipeline import __version__
from beamtrawl.pipeline.config import MAX_MESSAGE, ConfigError, load_config
from beamtrawl.pipeline.owner import FORCE_OPTION, OtherConfiguration
from beamtrawl.pipeline.report import EXIT_FATAL, EXIT_OK, summary, summary_line, write_report
from beamtrawl.transforms import logs

log = logging.getLogger("beamtrawl")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="beamtrawl", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True)
    overrides = argparse.ArgumentParser(add_help=False)
    overrides.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", dest="overrides",
                           help="override a configuration key (repeatable), validated like the file: "
                                "--set index.path=/srv/i.sqlite --set 'blacklist[0].regex=.*\\.bak'")

    _crawl_parser(commands, overrides)
    init = commands.add_parser("init", help="write a commented starter configuration for START_URLs")
    init.add_argument("start", nargs="*", metavar="START_URL",
                      help="folders, file://, http(s)://, smb:// or imap(s):// URLs (default: this folder)")
    init.add_argument("--output", "-o", default="crawl.yaml", help="the file to write (default: crawl.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    _search_parsers(commands, overrides)
    _serve_parsers(commands, overrides)
    return parser


def _crawl_parser(commands, overrides) -> None:
    crawl = commands.add_parser("crawl", parents=[overrides], help="crawl the start URLs of CONFIG into its index",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Any further --option is passed to Beam as a pipeline option.",
                                epilog=f"{CONFIG_REFERENCE}\n\n{EXIT_CODES}")
    crawl.add_argument("config", help=CONFIG_HELP)
    crawl.add_argument("--dry-run", action="store_true",
                       help="check the configuration, the index and every start URL (logins included), print "
                            "what would be crawled and which guards apply; write nothing")
    crawl.add_argument("--reprepare", action="store_true",
                       help="prepare every document again, changed or not (e.g. after installing a helper "
                            "program by hand); the same as --set reprepare=true")
    crawl.add_argument("--report", metavar="PATH|-",
                       help="also write the JSON report here ('-': standard output, the summary then goes to "
                            "standard error)")
    crawl.add_argument(FORCE_OPTION, action="store_true", dest="other_config",
                       help="crawl into an index another configuration filled (refused without it: each "
                            "crawl would delete what only the other found)")
    crawl.add_argument("--runner", help="direct (default), or a Beam runner name")
    crawl.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    crawl.add_argument("--quiet", "-q", action="store_true",
                       help="no progress display and no log lines; the summary and problems only")


def _search_parsers(commands, overrides) -> None:
    """``search``, ``export``, ``maintain`` and ``explain``: the commands that read an index."""
    search = commands.add_parser("search", parents=[overrides], help="search the index of CONFIG",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=f"{QUERY_SYNTAX}\n\n{CONFIG_REFERENCE}")
    search.add_argument("query", nargs="?", default="",
                        help="what to look for (the syntax: below); quote it as one argument")
    search.add_argument("--mode", default="auto", choices=("auto", "keyword", "semantic", "hybrid"),
                        help="match the words, the meaning (embeddings), or both fused; auto: hybrid for a question "
                             "or when the words find nothing, else keyword (docs/search.md)")
    search.add_argument("--like", default="", metavar="DOC_ID",
                        help="documents like this one (a hit's id, --json): more like this, by meaning")
    search.add_argument("--config", default=None, help=DEFAULT_CONFIG_HELP)
    search.add_argument("--limit", type=_limit, default=10, help=f"at most this many hits (1 to {MAX_LIMIT:,})")
    search.add_argument("--json", action="store_true", help="print a JSON array of hits")
    search.add_argument("--groups", default="", metavar="A,B",
                        help="the searcher's access groups; without them only public documents are found")
    search.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    export = commands.add_parser("export", parents=[overrides],
                                 help="write every document of CONFIG's index as a new Delta table at DEST")
    export.add_argument("config", help=CONFIG_HELP)
    export.add_argument("dest", help="a new folder or an s3://, gs://, abfss:// URL (docs/table.md)")
    export.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    maintain = commands.add_parser("maintain", parents=[overrides],
                                   help="compact CONFIG's Delta table and remove files of old versions")
    maintain.add_argument("config", help=CONFIG_HELP)
    maintain.add_argument("--retention-hours", type=_hours, default=None, metavar="H",
                          help="keep every version younger than this (default: a week); a running crawl's "
                               "version is always kept")
    maintain.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    explain = commands.add_parser("explain", parents=[overrides],
                                  help="say why a document is or is not in the index of CONFIG, and who may see it")
    explain.add_argument("target", metavar="URL_OR_PATH", help="a URL, or a local path (a file:// URL)")
    explain.add_argument("--config", required=True, help=CONFIG_HELP)
    explain.add_argument("--debug", action="store_true", help=DEBUG_HELP)


def _serve_parsers(commands, overrides) -> None:
    """``beamtrawl serve`` and ``beamtrawl user add`` (pipeline/serve, docs/serve.md)."""
    serve = commands.add_parser("serve", parents=[overrides], help="a search page and JSON API over the index of CONFIG",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=QUERY_SYNTAX)
    serve.add_argument("--config", default=None, help=DEFAULT_CONFIG_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8080, help="the port to listen on (default: 8080)")
    serve.add_argument("--users", metavar="PATH", help="the users file (beamtrawl user add): people sign in with "
                                                        "HTTP Basic and see their groups' documents too")
    serve.add_argument("--trusted-header", metavar="NAME",
                       help="a header naming the signed-in user, set by a reverse proxy (off by default); "
                            "needs --trusted-proxy; the user's groups come from --users")
    serve.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                       help="the reverse proxy's address or network (repeatable); only its requests may carry "
                            "--trusted-header")
    serve.add_argument("--document-seconds", type=_document_seconds, default=None, metavar="SECONDS",
                       help="how long a searcher waits for a document's server (a bucket, a share) to open it "
                            "and then for each part of it; then 504 (default: 30)")
    serve.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    user = commands.add_parser("user", help="manage the users who may sign in to beamtrawl serve")
    user_commands = user.add_subparsers(dest="user_command", required=True)
    add = user_commands.add_parser("add", help="add a user, or change their password and groups; the password is "
                                               "asked twice on a terminal, else read as one line from standard input")
    add.add_argument("name", help="the name the user signs in with")
    add.add_argument("--groups", default="", metavar="A,B", help="the user's access groups")
    add.add_argument("--admin", action="store_true",
                     help="an administrator: may ask the search page why a document is or is not in the index "
                          "(beamtrawl explain); without it, a user changed again is no administrator any more")
    add.add_argument("--users", required=True, metavar="PATH", help="the users file (created if missing)")
    add.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    listing = user_commands.add_parser("list", help="the users of the users file and their groups")
    listing.add_argument("--users", required=True, metavar="PATH", help="the users file")
    listing.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    remove = user_commands.add_parser("remove", help="take a user out of the users file (a running serve "
                                                     "refuses them from the next request)")
    remove.add_argument("name", help="the name the user signs in with")
    remove.add_argument("--users", required=True, metavar="PATH", help="the users file")
    remove.add_argument("--debug", action="store_true", help=DEBUG_HELP)


MAX_LIMIT = 10_000  # hits one search may return
#: The configuration ``search`` and ``serve`` read without --config: the file ``init`` writes, in this folder.
DEFAULT_CONFIG = "crawl.yaml"
DEFAULT_CONFIG_HELP = f"the crawl's configuration file (default: ./{DEFAULT_CONFIG} when it is there)"


def _default_config(args) -> str:
    """--config, else ./crawl.yaml (what ``init`` wrote) when present; else the one line saying so."""
    if args.config is not None:
        return args.config
    if os.path.isfile(DEFAULT_CONFIG):
        return DEFAULT_CONFIG
    raise ConfigError(f"beamtrawl {args.command}: no --config given and no {DEFAULT_CONFIG} in this folder "
                      f"(write one with: beamtrawl init START_URL)")


def _hours(text: str) -> float:
    """``--retention-hours``: a number of hours, 0 or more (0: keep only the current version and running crawls')."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
    if not 0 <= value < 1e6:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text[:40]} is not a number of hours from 0 to 1,000,000")
    return value


def _limit(text: str) -> int:
    """``--limit``: a whole number from 1 to MAX_LIMIT (-1 once returned every hit)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"{text[:40]} is not between 1 and {MAX_LIMIT:,}")
    return value


def _port(text: str) -> int:
    """``--port``: a TCP port number."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a port number (1 to 65535)")
    return int(text)


def _document_seconds(text: str) -> float:
    """``--document-seconds``: 1 to 600 seconds."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 1 <= seconds <= 600:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds from 1 to 600")
    return seconds


CONFIG_HELP = "the crawl configuration (YAML; beamtrawl init writes one)"
DEBUG_HELP = "on failure, the traceback; and what Beam and the libraries log"
CONFIG_REFERENCE = "configuration reference: README.md, section 'Configuration'"
EXIT_CODES = ("exit codes: 0 everything indexed; 1 some documents or folders failed (each a report line);\n"
              "2 configuration error or fatal failure, and then no delete ran")
QUERY_SYNTAX = """query syntax (README.md, 'Search syntax'):
  word other        documents holding both words
  "a phrase"        the words in this order
  -word, -"a b"     documents without them (a query may start with -)
  calib*            words starting with calib
  field:value       mimetype:text/*  extension:pdf  path:/srv/docs/lab  url:file:///srv/docs
                    and name:value for an indexed auxiliary field; each negatable (-extension:csv)"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        beam = version("apache-beam")
    except PackageNotFoundError:
        beam = "not installed"
    return f"beamtrawl {__version__} (Apache Beam {beam}, Python {sys.version.split()[0]})"


def _query_as_operand(argv: list[str]) -> list[str]:
    """``search '-draft'`` as ``search -- -draft``: a search argument that starts with ``-`` but is none of
    the search options is the query, as a person means it (a NOT query), not an unknown option."""
    if argv[:1] != ["search"] or "--" in argv:
        return argv
    search = _parser()._subparsers._group_actions[0].choices["search"]  # argparse keeps its sub-parsers here
    takes_value = {s for a in search._actions if a.nargs is None and a.option_strings
                   for s in a.option_strings}
    options = {s for a in search._actions for s in a.option_strings}
    rest, i = [argv[0]], 1
    while i < len(argv):
        arg = argv[i]
        if arg in takes_value:
            rest += argv[i:i + 2]
            i += 2
            continue
        if arg.startswith("-") and arg.split("=", 1)[0] not in options and len(arg) > 1:
            return [*rest, *argv[i + 1:], "--", arg]
        rest.append(arg)
        i += 1
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = _query_as_operand(sys.argv[1:] if argv is None else list(argv))
    args, extra = _parser().parse_known_args(argv)
    logs.route(getattr(args, "debug", False))
    if getattr(args, "quiet", False):
        logging.getLogger("beamtrawl").setLevel(logging.WARNING)
    if args.command == "init":
        return _init(args.start, args.output, args.force)
    if args.command == "user":
        from beamtrawl.pipeline import users

        return users.run(args)
    if args.command in ("search", "export", "maintain", "serve", "explain") and extra:
        _parser().error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "crawl":
        from beamtrawl.runners import allocator
        from beamtrawl.runners.beam_import import import_beam

        allocator.bound()  # before any thread: its processes' memory stays what they use (runners/allocator.py)
        import_beam()  # first: whatever imports Beam next gets it without what a crawl never uses
    if args.command == "crawl" and (unknown := _unknown_beam_options(extra)):
        _parser().error(unknown)
    if args.command == "crawl" and not args.dry_run:
        from beamtrawl.runners import forked_workers

        # A command is no IPython session; without this, Beam imports IPython (0.6 s) to ask if it is one.
        sys.modules.setdefault("IPython", None)
        forked_workers.prestart(forked_workers.worker_count(args.runner, extra),  # before any index or thread
                                in_command="--worker_in_command" in extra)
    try:
        if args.command == "crawl" and args.reprepare:
            args.overrides.append("reprepare=true")
        if args.command in ("search", "serve"):
            args.config = _default_config(args)
        # explain compares with what a crawl would do: the configuration as a crawl loads it
        config = load_config(args.config, crawling=args.command in ("crawl", "explain"), overrides=args.overrides)
        return _run(config, args, extra)
    except (ConfigError, OtherConfiguration) as err:
        log.error("%s", err)
        return EXIT_FATAL
    except KeyboardInterrupt:  # before a crawl's own handler (pipeline/interrupt.py) is there, or another command
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`beamtrawl search … | head -1`): nothing more to say
        _discard_stdout()
        return EXIT_OK
    except Exception as err:
        if args.debug:
            raise
        log.error("beamtrawl: %s", (str(err) or type(err).__name__)[:MAX_MESSAGE])
        return EXIT_FATAL


def _run(config, args, extra: list[str]) -> int:
    """The command ``args`` names, on the loaded configuration."""
    if args.command == "crawl" and extra and "://" in config.work_dir:
        from beamtrawl.pipeline import history

        history.use_options(extra)  # the work folder's probe reaches the store as the workers will
    if args.command == "crawl" and args.dry_run:
        from beamtrawl.pipeline.dry_run import dry_run

        text, code = dry_run(config, args.runner, args.report, args.other_config)
        print(text)
        return code
    if args.command == "crawl":
        return _crawl(config, args, extra)
    if args.command == "export":
        return _export(config, args.dest)
    if args.command == "maintain":
        return _maintain(config, args.retention_hours)
    if args.command == "serve":
        return _serve(config, args)
    if args.command == "explain":
        from beamtrawl.pipeline.explain import explain

        print("\n".join(explain(config, args.target)))
        return EXIT_OK
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    return _search(config, args, groups)


def _unknown_beam_options(extra: list[str]) -> str:
    """Why ``extra`` (what beamtrawl's own options left, handed to Beam) is refused, or "": an option Beam
    does not know is a typo (``--dryrun`` would otherwise run a real crawl), never passed on silently."""
    names = [a[2:].split("=", 1)[0] for a in extra if a.startswith("--") and len(a) > 2]
    if not names:
        return ""
    from apache_beam.options.pipeline_options import PipelineOptions
    from beamtrawl.runners import forked_workers, heartbeat  # noqa: F401 - their options

    beam = {name.replace("-", "_") for name in PipelineOptions([]).get_all_options(drop_default=False)}
    ours = [o for a in _parser()._subparsers._group_actions[0].choices["crawl"]._actions for o in a.option_strings]
    for name in names:
        if name.replace("-", "_") not in beam:
            near = (difflib.get_close_matches(f"--{name}", ours, n=1)
                    or difflib.get_close_matches(f"--{name}", [f"--{b}" for b in beam], n=1))
            return f"unknown option --{name}" + (f" (did you mean {near[0]}?)" if near else
                                                  " (neither beamtrawl's nor a Beam pipeline option)")
    return heartbeat.refused(extra)


def _crawl(config, args, beam_args: list[str]) -> int:
    """``crawl``: ``args`` are the command's (runner, report, quiet, other_config); ``beam_args`` go to Beam."""
    from beamtrawl.pipeline.crawl import (  # Beam loads slowly: only when crawling
        Launch,
        check_writable,
        crawl,
    )
    from beamtrawl.pipeline.interrupt import Interrupt
    from beamtrawl.transforms.preparators.isolation import end_children

    report_to = args.report
    try:
        from beamtrawl.pipeline.progress import LiveProgress

        if report_to and report_to != "-":
            check_writable(report_to, config.work_dir)  # before the crawl, as the configured report path
        with Interrupt(lambda stop: _interrupted(config, report_to, stop)) as stop:
            report = crawl(config, Launch(args.runner, tuple(beam_args), LiveProgress.mode_for(args.quiet),
                                          args.other_config, stop))
    finally:
        end_children()  # those of an in-process runner; the command ends without Python's shutdown (run)
    if report_to == "-":
        print(json.dumps(report, indent=2, ensure_ascii=False))
    elif report_to:
        try:
            write_report(report, report_to)
        except OSError as err:  # the crawl is done (its deletes too): not exit 2, which promises none ran
            log.error("%s: the report copy could not be written (%s); the report is at %s", report_to,
                      err.strerror or err, config.report)
            report["exit_code"] = max(report["exit_code"], 1)
    print(summary(report), file=sys.stderr if report_to == "-" else sys.stdout)
    print(summary_line(report), file=sys.stderr if report_to == "-" else sys.stdout)
    return report["exit_code"]


def _interrupted(config, report_to: str | None, stop) -> list[str]:
    """Ctrl-C (pipeline/interrupt.py): write the partial report — the counts the workers had shown — and
    return the lines to print. During the deletes the report on disk already lists those due: it stays."""
    import shutil

    from beamtrawl.pipeline.interrupt import INTERRUPTED, INTERRUPTED_DELETING
    from beamtrawl.pipeline.progress import totals
    from beamtrawl.pipeline.report import build_report
    from beamtrawl.transforms.progress import PROGRESS_DIR_ENV

    if stop.deleting:
        return [INTERRUPTED_DELETING, f"report: {config.report}"]
    folder = os.environ.get(PROGRESS_DIR_ENV, "")
    seen = totals(folder) if folder and os.path.isdir(folder) else {}
    shutil.rmtree(folder, ignore_errors=True) if folder else None
    report = build_report({"accepted": seen.get("found", 0), "prepared": seen.get("prepared", 0),
                           "written": seen.get("written", 0)}, [], config=config.source, index=config.index.label,
                          started_at=stop.started_at, report_path=config.report, fatal="", interrupted=INTERRUPTED)
    report["exit_code"] = stop.exit_code
    report["timings"] = {"total_s": round(time.monotonic() - stop.began, 3)}
    written = []
    for path in (config.report, report_to):
        if path and path != "-":
            try:
                write_report(report, path)
                written.append(path)
            except OSError:
                pass
    return [INTERRUPTED + (f" (partial report: {', '.join(written)})" if written else ""), summary_line(report)]


def _init(start: list[str], output: str, force: bool) -> int:
    from beamtrawl.pipeline.starter import index_for, starter_config

    if os.path.exists(output) and not force:
        log.error("%s: exists; choose another --output or add --force", output)
        return EXIT_FATAL
    try:
        text = starter_config(start, index_for(output))
    except ValueError as err:  # a start URL beamtrawl cannot crawl, or a path that is not there
        log.error("beamtrawl init: %s", err)
        return EXIT_FATAL
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as err:
        log.error("%s: cannot write: %s", output, err.strerror or err)
        return EXIT_FATAL
    print(f"wrote {output}; crawl with: beamtrawl crawl {shlex.quote(output)}")
    return 0


def _search(config, args, groups=()) -> int:
    from beamtrawl.pipeline.hits import highlights, render
    from beamtrawl.transforms.embed import lazy_embedder
    from beamtrawl.transforms.index import make_target, semantic
    from beamtrawl.transforms.index.query import asking

    # a query beyond the bounds is refused before the index is opened
    query = asking(args.query, [f.name for f in config.auxiliary_fields if f.index], groups, args.like, args.mode)
    target = make_target(config.index)
    target.check()
    limit, embedder = args.limit, lazy_embedder(config.embeddings)
    if target.pages_unavailable():  # a target without pages (the table) cannot count: the hits are the total
        hits = semantic.unpaged_hits(target, query, embedder, limit)
        total = len(hits)
    else:
        page = semantic.search_page(target, query, embedder, limit, facet_size=1)
        hits, total = page.hits, page.total
    if args.json:
        print(json.dumps([hit.__dict__ for hit in hits], ensure_ascii=False, indent=2))
        return 0
    print(render(hits, total, highlights(sys.stdout)))
    return 0


def _export(config, dest: str) -> int:
    from beamtrawl.transforms.index import make_target
    from beamtrawl.transforms.index.table import DeltaIndex

    source = make_target(config.index)
    source.check()  # an index not crawled yet: one line, and no table made at DEST
    written = DeltaIndex(dest).write_all(source.documents())
    print(f"exported {written} documents of {config.index.label} to the Delta table {dest}")
    return 0


def _maintain(config, retention_hours: float | None) -> int:
    from beamtrawl.transforms.index import make_target
    from beamtrawl.transforms.index.table import DEFAULT_RETENTION_HOURS, DeltaIndex

    target = make_target(config.index)
    if not isinstance(target, DeltaIndex):
        log.error("%s: beamtrawl maintain applies to a Delta table (index.table); this index needs none",
                  config.index.label)
        return EXIT_FATAL
    done = target.maintain(DEFAULT_RETENTION_HOURS if retention_hours is None else retention_hours)
    print(f"{config.index.label}: compacted {done['files_compacted']} files into {done['files_written']}, removed "
          f"{done['files_removed']} files older than {done['retention_hours']} hours no version needs; "
          f"version {done['version']}" + (f"; kept versions {done['versions_kept_for_crawls']} for running crawls"
                                          if done["versions_kept_for_crawls"] else ""))
    return 0


def _serve(config, args) -> int:
    import uvicorn
    from beamtrawl.pipeline.serve.app import SERVER_OPTIONS, make_app
    from beamtrawl.pipeline.serve.people import Doorkeeper, UsersError
    from beamtrawl.transforms.index import make_target

    try:
        doorkeeper = Doorkeeper(args.users, args.trusted_header, tuple(args.trusted_proxy))
    except UsersError as err:
        log.error("beamtrawl serve: %s", err)
        return EXIT_FATAL
    target = make_target(config.index)
    target.check()  # a missing or unreachable index stops the start with one line
    if target.pages_unavailable():
        log.error("beamtrawl serve: %s", target.pages_unavailable())
        return EXIT_FATAL
    print(f"beamtrawl serve: searching {config.index.label} at http://{args.host}:{args.port}/", flush=True)
    try:
        def crawl_config():  # what /explain compares with: the configuration as a crawl loads it
            return load_config(args.config, crawling=True, overrides=args.overrides)

        uvicorn.run(make_app(config, doorkeeper, crawl_config, args.document_seconds), host=args.host, port=args.port,
                    **SERVER_OPTIONS, log_level="debug" if args.debug else "warning", access_log=args.debug)
    except SystemExit as stop:  # uvicorn exits when it cannot listen (it logged why)
        if stop.code:
            log.error("beamtrawl serve: cannot listen on %s:%s", args.host, args.port)
            return EXIT_FATAL
    return 0


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so flushing what is left of it at exit fails no more."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run() -> None:
    """The ``beamtrawl`` command. It ends without Python's shutdown, which waits half a second for the idle
    threads of Beam and gRPC; everything a crawl writes is closed by then, and its preparing children ended.
    The exit handlers still run: Beam stops in them the job servers it started (``--flink_job_server_jar``),
    which would otherwise outlive the command."""
    code = main()
    atexit._run_exitfuncs()  # what Python's shutdown runs first (logging.shutdown among them)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # e.g. `beamtrawl search … | head` closed the pipe
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
