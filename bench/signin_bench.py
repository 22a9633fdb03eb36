"""Sign-in benchmark (issue 26, items 3 and 4): a valid sign-in while many addresses guess, and whether a
user name can be told by the time of its answer.

Run from the repository root (beamtrawl installed, as root or with loopback addresses 127.x usable)::

    python bench/signin_bench.py [--addresses 200] [--sign-ins 5] [--pairs 8] [--tiny]

1. A small corpus is crawled and served by a real ``beamtrawl serve`` (tests/serve_site.py), with users.
2. Baseline, in the same run: correct sign-ins of users not signed in before (so each costs a scrypt
   check), from fresh loopback addresses, with nobody guessing.
3. Attack: ``--addresses`` loopback addresses (127.1.x.y) each send wrong passwords in a loop — half of them
   for ``alice``, half for a name of their own — one connection each, waiting at most 1 s when answered 429
   (``Retry-After``). One correct sign-in is made in the first burst of guesses; once as many guesses failed
   as there are addresses, and ``--warm-up`` seconds more, the same correct sign-ins as the baseline's.
   Printed: the sign-ins' seconds (max, median), the baseline's, their ratio, the guesses answered 401 and
   429, the first burst's sign-in. Target: max under 1.5 s (before: 15.6 s).
4. Names by timing: ``--pairs`` pairs of wrong sign-ins, an unknown name and a known one, each from a fresh
   address (no slow-down applies). Printed: both ranges in ms, how many pairs the unknown one answered
   faster, the difference of medians against the spread within each side. Target: the ranges overlap, the
   difference below the spread (before: 1002-1009 against 1104-1166 ms, 8 of 8 pairs apart).

``--tiny`` (run by tests/test_signin.py) does the same with 10 addresses, 2 sign-ins and 2 pairs.
Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from beamtrawl.pipeline.serve.people import add_user

from tests.serve_site import PASSWORD, make_site, served, sign_in


def valid_sign_ins(base: str, users: list[str], subnet: int) -> list[float]:
    """Seconds of each user's first, correct sign-in, each from an address of its own."""
    times = []
    for n, user in enumerate(users):
        status, seconds, _ = sign_in(base, user, PASSWORD, f"127.{subnet}.0.{n + 1}")
        if status != 200:
            raise SystemExit(f"check failed: a correct sign-in of {user} answered {status}")
        times.append(seconds)
    return times


class Guessers:
    """``count`` addresses guessing until stopped; counts their answers."""

    def __init__(self, base: str, count: int):
        self.base, self.count = base, count
        self.stop = threading.Event()
        self.answers: dict[int, int] = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._guess, args=(n,), daemon=True) for n in range(count)]

    def _guess(self, n: int) -> None:
        source = f"127.1.{n // 250}.{n % 250 + 1}"
        name = "alice" if n % 2 else f"nobody{n}"
        tries = 0
        while not self.stop.is_set():
            tries += 1
            try:
                status, _, retry = sign_in(self.base, name, f"guess {n} {tries}", source)
            except OSError:
                status, retry = 0, "1"
            with self.lock:
                self.answers[status] = self.answers.get(status, 0) + 1
            if status != 401:
                self.stop.wait(min(float(retry or 1), 1.0))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def name_timing(base: str, pairs: int) -> tuple[list[float], list[float]]:
    """(unknown name ms, known name ms): wrong sign-ins from fresh addresses, alternating, each name tried
    once (as a prober of names does; a name's own failures slow it, known or not)."""
    unknown, known = [], []
    for n in range(pairs):
        for user, into, last in ((f"stranger{n}", unknown, 1), (f"known{n}", known, 2)):
            status, seconds, _ = sign_in(base, user, f"wrong {n}", f"127.3.{n}.{last}")
            if status != 401:
                raise SystemExit(f"check failed: a wrong sign-in of {user} answered {status}")
            into.append(seconds * 1000)
    return unknown, known


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addresses", type=int, default=200)
    parser.add_argument("--sign-ins", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--warm-up", type=float, default=3.0, help="seconds after every address failed once")
    parser.add_argument("--tiny", action="store_true", help="10 addresses, 2 sign-ins, 2 pairs (the test suite)")
    args = parser.parse_args()
    if args.tiny:
        args.addresses, args.sign_ins, args.pairs, args.warm_up = 10, 2, 2, 1.0
    folder = Path(tempfile.mkdtemp(prefix="beamtrawl-signin-bench-"))
    site = make_site(folder)
    users = [f"person{n}" for n in range(2 * args.sign_ins + 1)]
    for user in [*users, *(f"known{n}" for n in range(args.pairs))]:
        add_user(str(site.users), user, PASSWORD, ["staff"])
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with served(site) as base:
        baseline = valid_sign_ins(base, users[: args.sign_ins], 2)
        with Guessers(base, args.addresses) as guessers:
            started = time.monotonic()
            first = valid_sign_ins(base, users[args.sign_ins:args.sign_ins + 1], 5)[0]  # in the first burst
            while guessers.answers.get(401, 0) < args.addresses and time.monotonic() - started < 120:
                time.sleep(0.2)  # until as many guesses failed as there are addresses
            time.sleep(args.warm_up)
            round_s = time.monotonic() - started
            attacked = valid_sign_ins(base, users[args.sign_ins + 1:], 4)
            answers = dict(guessers.answers)
        unknown, known = name_timing(base, args.pairs)
    ratio = max(attacked) / max(statistics.median(baseline), 1e-9)
    print(f"valid sign-in while {args.addresses} addresses guess: max {max(attacked):.3f} s, median "
          f"{statistics.median(attacked):.3f} s; alone: median {statistics.median(baseline):.3f} s; "
          f"attacked max / alone median {ratio:.1f}; guesses answered {answers}; "
          f"target max < 1.5 s: {'met' if max(attacked) < 1.5 else 'MISSED'}; the first sign-in, in the first "
          f"burst of guesses: {first:.3f} s; measured {round_s:.0f} s after the guessing began")
    faster = sum(u < k for u, k in zip(unknown, known, strict=True))
    difference = statistics.median(known) - statistics.median(unknown)
    spread = max(max(unknown) - min(unknown), max(known) - min(known))
    apart = min(known) > max(unknown) or min(unknown) > max(known)
    print(f"wrong password, unknown name: {min(unknown):.0f}-{max(unknown):.0f} ms; known name: "
          f"{min(known):.0f}-{max(known):.0f} ms; unknown/known median {statistics.median(unknown) / statistics.median(known):.3f}; "
          f"unknown faster in {faster} of {len(known)} pairs; difference of medians {difference:.1f} ms against "
          f"a spread of {spread:.1f} ms; ranges {'apart' if apart else 'overlap'}; "
          f"target: {'met' if not apart and abs(difference) < spread else 'MISSED'}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
