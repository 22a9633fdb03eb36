"""``beamtrawl user add | list | remove``: the people who may sign in to ``beamtrawl serve``
(the users file of pipeline/serve/people.py)."""

from __future__ import annotations

import getpass
import logging
import sys

from beamtrawl.pipeline.report import EXIT_FATAL, terminal_safe
from beamtrawl.pipeline.serve.people import UsersError, add_user, read_users, remove_user

log = logging.getLogger("beamtrawl")

#: What a user without groups may see, said when one is added so (they are signed in, yet see what anyone sees).
NO_GROUPS = ("note: {name} has no groups: signed in, they see public documents only, as anyone who has not "
             "signed in; give them groups with: beamtrawl user add {name} --groups A,B --users {path}")


def run(args) -> int:
    """The ``user`` command ``args.user_command``; its exit code."""
    try:
        if args.user_command == "list":
            return _list(args.users)
        if args.user_command == "remove":
            return _remove(args.users, args.name)
        return _add(args.users, args.name, args.groups, args.admin)
    except UsersError as err:
        log.error("beamtrawl user %s: %s", args.user_command, err)
        return EXIT_FATAL
    except OSError as err:
        log.error("beamtrawl user %s: %s: cannot write the users file (%s)", args.user_command, args.users,
                  err.strerror or err)
        return EXIT_FATAL


def _add(path: str, name: str, groups: str, admin: bool) -> int:
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != password:
            log.error("beamtrawl user add: the two passwords differ; nothing changed")
            return EXIT_FATAL
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    wanted = [g.strip() for g in groups.split(",") if g.strip()]
    new = add_user(path, name, password, wanted, admin)
    print(f"{'added' if new else 'changed'} {name} in {path}" + (", an administrator" if admin else ""))
    if not wanted:
        print(NO_GROUPS.format(name=name, path=path), file=sys.stderr)
    return 0


def _list(path: str) -> int:
    users = read_users(path)
    if not users:
        print(f"{path}: no users (add one with: beamtrawl user add NAME --groups A,B --users {path})")
    for user in sorted(users.values(), key=lambda u: u.name):
        print(f"{terminal_safe(user.name)}\t{','.join(user.groups) or '(no groups: public documents only)'}"
              + ("\tadministrator" if user.admin else ""))
    return 0


def _remove(path: str, name: str) -> int:
    if not remove_user(path, name):
        log.error("beamtrawl user remove: %s: no user %s; nothing changed (beamtrawl user list --users %s)",
                  path, name, path)
        return EXIT_FATAL
    print(f"removed {name} from {path}")
    return 0
