"""Sign-in that guesses cannot starve or probe: who may have a password checked now, and in which order.

A password check is an scrypt hash (~50 ms of a core, 16 MiB). Guessers must neither take the hashes a
person signing in needs, nor learn from the time of an answer whether a user name exists:

* :class:`Failures` — recent failures per client address and per user name (any name, known or not), in a
  bounded table. After a failure the address and the name each wait ``FAILURE_DELAY`` seconds, doubled for
  each further failure within ``FAILURE_WINDOW``, at most ``MAX_FAILURE_DELAY``; while an address or name
  waits, or has a check under way, its next sign-in is refused at once (429 with ``Retry-After``), without
  a hash. The answer to a failure itself waits the delay (its keys busy meanwhile), so a person typing
  again after a 401 is not refused, and one address has one answer waiting at most. So a guess costs a
  hash at most once per delay per address and per name. An address that signed in as a name before is
  held only by the failures of that pair (a guesser elsewhere cannot lock the person out of their own
  address).
* :class:`HashSlots` — ``slots`` hashes at once, given to the waiting check with the fewest recent failures
  (of its address and name), the latest first among equals, at most ``most_waiting`` waiting (a newcomer
  takes the place of the oldest of the worst ranked, unless it ranks worse): a first try never queues
  behind guesses that failed before, nor behind a burst of first guesses that came before it (each address
  has one check at a time, so a burst does not renew itself), and memory stays bounded.

Nothing here hashes: :class:`~beamtrawl.pipeline.serve.people.Doorkeeper` does, with a dummy hash for an
unknown name so that it costs what a known one does.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections import OrderedDict

FAILURE_DELAY, MAX_FAILURE_DELAY, FAILURE_WINDOW = 1.0, 16.0, 300.0
FAILURE_ENTRIES = 4096  # addresses and names remembered (least recently failed forgotten first)
TRUSTED_ENTRIES = 4096  # (address, name) pairs that signed in
HASH_SLOTS, MOST_WAITING = 2, 64


class TooManyFailures(Exception):
    """A sign-in refused without a check; ``seconds`` until one may be tried again."""

    def __init__(self, seconds: float):
        super().__init__(f"try again in {seconds:.0f} s")
        self.seconds = seconds


class Failures:
    """Recent sign-in failures per address and per user name; see the module docstring."""

    def __init__(self, entries: int = FAILURE_ENTRIES):
        self.entries = entries
        self._recent: OrderedDict[str, list[float]] = OrderedDict()  # key → failure times, oldest key first
        self._busy: set[str] = set()  # keys with a check under way
        self._trusted: OrderedDict[tuple[str, str], None] = OrderedDict()

    def _keys(self, address: str, name: str) -> list[str]:
        """What a sign-in is held by: its address and its name, or, for a pair that signed in before, the
        pair alone (guesses for that name from that address are still slowed, by the pair's failures)."""
        if (address, name) in self._trusted:
            return [f"pair {address} {name}"]
        return [f"address {address}", *([f"name {name}"] if name else [])]

    def _times(self, key: str, now: float) -> list[float]:
        return [t for t in self._recent.get(key, ()) if now - t < FAILURE_WINDOW]

    def wait(self, key: str, now: float) -> float:
        """Seconds until ``key`` may have a password checked again (0: now)."""
        times = self._times(key, now)
        return max(0.0, times[-1] + delay(len(times)) - now) if times else 0.0

    def rank(self, address: str, name: str) -> int:
        """Recent failures of the address and the name: the fewer, the sooner a hash."""
        now = time.monotonic()
        return sum(len(self._times(key, now)) for key in self._keys(address, name))

    def admit(self, address: str, name: str) -> list[str]:
        """Mark a check for (address, name) under way and return its keys for :meth:`done`, or raise
        :class:`TooManyFailures` if either waits or has a check under way."""
        now = time.monotonic()
        keys = self._keys(address, name)
        seconds = max(self.wait(key, now) for key in keys)
        if seconds > 0 or any(key in self._busy for key in keys):
            raise TooManyFailures(max(seconds, 1.0))
        self._busy.update(keys)
        return keys

    def failed(self, keys: list[str]) -> float:
        """A check of :meth:`admit` failed: count it for each key; the seconds its answer waits (the keys
        stay busy meanwhile, so a person typing again is not refused)."""
        now = time.monotonic()
        for key in keys:
            times = self._times(key, now)[-8:] + [now]
            self._recent.pop(key, None)
            self._recent[key] = times
        while len(self._recent) > self.entries:
            self._recent.popitem(last=False)
        return max(self.wait(key, now) for key in keys)

    def trust(self, address: str, name: str) -> None:
        """(address, name) signed in: from now on only its own failures hold it."""
        self._trusted.pop((address, name), None)
        self._trusted[(address, name)] = None
        while len(self._trusted) > TRUSTED_ENTRIES:
            self._trusted.popitem(last=False)

    def release(self, keys: list[str]) -> None:
        self._busy.difference_update(keys)


def delay(failures: int) -> float:
    """The wait after ``failures`` recent failures."""
    return min(FAILURE_DELAY * 2 ** (failures - 1), MAX_FAILURE_DELAY) if failures else 0.0


class HashSlots:
    """``slots`` password checks at once, the next to the waiting check of lowest rank, the latest among
    equals (asyncio, one loop)."""

    def __init__(self, slots: int = HASH_SLOTS, most_waiting: int = MOST_WAITING):
        self.free = slots
        self.most_waiting = most_waiting
        self._waiting: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()

    @contextlib.asynccontextmanager
    async def slot(self, rank: int):
        """Hold a slot for the block; raise TooManyFailures when too many wait and none ranks worse."""
        if self.free and not self._waiting:
            self.free -= 1
        else:
            await self._queue(rank)
        try:
            yield
        finally:
            self._release()

    async def _queue(self, rank: int) -> None:
        if len(self._waiting) >= self.most_waiting:
            worst = max(self._waiting)  # the highest rank, the oldest of it
            if worst[0] < rank:
                raise TooManyFailures(1.0)
            self._waiting.remove(worst)  # a guess that failed before makes room for a better-ranked check
            heapq.heapify(self._waiting)
            worst[2].set_exception(TooManyFailures(1.0))
        turn = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (rank, -next(self._order), turn))  # the latest first among equals
        try:
            await turn
        except asyncio.CancelledError:  # the client left: its slot, if it was handed one, goes on
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self._release()
            raise

    def _release(self) -> None:
        while self._waiting:
            _rank, _n, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1
