"""A hard time and memory bound for preparation: the preparators run in a child process that is
killed when a document takes longer than the timeout, and whose address space is limited.

A worker process keeps one such child, shared by all its preparing DoFns through Beam's ``Shared``
(started on the first document, so a worker that prepares nothing costs nothing). That keeps the
per-document cost to a few pipe messages instead of a process per document, and the start-up to one
child per worker. A DoFn hands a document over and collects the result later, so the worker's own work
(reading, sniffing, building documents) runs while the child prepares. Several documents may be in flight
(a bounded queue in the pipe), so the child starts the next one the moment it finishes one: per-document
times vary tenfold between formats, and with one document in flight child and worker wait for each other.
A child killed on a timeout, or dead of a crash or of its memory limit, is
restarted and goes on with the preparators after the one at work, under a fresh timeout: the one at work
gets its report line, as any failing preparator does, and the document a substitute only if all fail. Each
restart moves past one preparator of the chain, so a document costs at most one timeout per preparator. The
documents queued behind it died unread with the child and are sent to the new one again.

Protocol on the child's stdin/stdout (its own stdout is redirected to stderr, so a preparator that
prints cannot corrupt it): 8-byte length, then a pickle, written with one call. The parent sends the
preparators once, then ``(data, url, mimetype, start, seq)`` per document (``start``: the chain position to
begin at; ``seq``: a number unique to this hand-over); the child answers ``("ready", None)`` once, then in
order per document ``("done", (prepared or None, failures))``. One message each way per document: on a busy
machine every message the other process must wake up for costs a scheduling delay. The ``seq`` and chain
position of the preparator at work and the failures before it, which the parent needs when it kills the
child, go into a small status file (8-byte length, then JSON) the parent reads only then.

A document whose whole chain is preparators that cannot hang, crash or grow (:data:`INLINE`: the text and
XML readers and the metadata-only catch-all) and whose bytes are at most :data:`INLINE_MAX_BYTES` is prepared in
the worker itself, not handed over. They are Python over the standard library's C — UTF-8 decoding, ``re``
without backtracking, ``splitlines``, expat and ElementTree's iterative tree walk (defusedxml refuses entities,
so nothing expands) — and charset-normalizer, which looks at a few fixed-size chunks: their time and memory are
linear in the document's size, at most about a tenth of a second and a few megabytes for 256 KiB of the worst
bytes tried (newlines, random bytes, one character repeated; elements nested 40,000 deep, 20,000 attributes).
The hand-over would cost more than they do (two pickles, pipe messages both ways, the child's wake-up), for
2,848 of the real corpus's 5,722 documents (docs/tika-compare.md).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque

from beamtrawl.transforms import logs
from beamtrawl.transforms.preparators.base import PreparatorSpec, Prepared
from beamtrawl.transforms.preparators.chain import Chain, chain_for
from beamtrawl.transforms.preparators.metadata_only import prepare_metadata_only
from beamtrawl.transforms.preparators.text import prepare_text
from beamtrawl.transforms.preparators.xml import prepare_xml
from beamtrawl.transforms.values import Bounds

_HEADER = struct.Struct("<Q")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_CHUNK = 64 * 1024  # what one read of a pipe takes at least (below malloc's threshold for a mapping of its own)
MAX_IN_FLIGHT = 4  # documents handed to the child and not yet answered
#: Preparator functions that run in the worker for small documents (module docstring: why they are safe there).
INLINE = frozenset({prepare_text, prepare_xml, prepare_metadata_only})
INLINE_MAX_BYTES = 256 * 1024
ORPHAN_POLL_S = 1.0  # how often a preparing child looks whether its worker is still there


def _frame(obj) -> memoryview:
    """The message for ``obj``: 8-byte length, then the pickle, in one buffer (written with one call, it
    takes at most ceil(size / page) pages of a pipe: see ``Isolated._hand_over``)."""
    buffer = io.BytesIO()
    buffer.write(bytes(_HEADER.size))
    pickle.dump(obj, buffer, protocol=pickle.HIGHEST_PROTOCOL)
    message = buffer.getbuffer()
    _HEADER.pack_into(message, 0, len(message) - _HEADER.size)
    return message


def _write(fd: int, message: memoryview) -> None:
    while message:
        message = message[os.write(fd, message):]


def _widen(fd: int) -> int:
    """Raise a pipe's capacity to the system's maximum; the capacity in bytes (one page if unknown)."""
    try:
        with open("/proc/sys/fs/pipe-max-size") as limit:
            return fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, int(limit.read()))
    except (OSError, ValueError, AttributeError):  # not Linux, or over the user's pipe quota
        try:
            return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        except (OSError, AttributeError):
            return _PAGE


class _Messages:
    """The messages coming in on a pipe, read as they come: one ``os.read`` takes what the pipe holds (up to
    ``_CHUNK``), often the whole of a message, header and pickle, or several (answers queue up while the worker
    works). Reading the header and the pickle apart, each after a ``select``, cost three system calls a document
    on each side, and a message that came whole still woke its reader twice (issue 27)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def receive(self, deadline: float | None = None):
        """The next message; ``deadline`` bounds the wait for its start only: the rest was written in one call
        by a child done with the document (a large answer read late may pause while the child refills the pipe)."""
        self._fill(_HEADER.size, deadline)
        end = _HEADER.size + _HEADER.unpack_from(self.buffer)[0]
        self._fill(end, None)
        message = pickle.loads(self.buffer[_HEADER.size:end])
        del self.buffer[:end]
        return message

    def _fill(self, size: int, deadline: float | None) -> None:
        while len(self.buffer) < size:
            # past the deadline, what the child already wrote still counts (it was read late, not sent late)
            if deadline is not None and not select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError
            chunk = os.read(self.fd, min(max(size - len(self.buffer), _CHUNK), 1 << 20))
            if not chunk:
                raise EOFError
            self.buffer += chunk


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"the preparing process was killed by {name}"
    return f"the preparing process exited with {code}"


DEFAULT_BOUNDS = Bounds()


def runner_for(preparators, bounds: Bounds, shared=None):
    """What runs a DoFn's preparations: a child process under the bounds (the worker's one, when ``shared``,
    a ``apache_beam.utils.shared.Shared`` handle, is given), or the worker itself."""
    if not bounds.isolate:
        return InProcess(preparators)
    if shared is None:
        return Isolated(preparators, bounds.timeout, bounds.memory_limit)
    return shared.acquire(lambda: Isolated(preparators, bounds.timeout, bounds.memory_limit, owned=False),
                          tag=repr((preparators, bounds)))


class Ticket:
    """A document handed to a runner; ``result()`` waits for (prepared or None, failures)."""

    def __init__(self, runner=None, value=None, request=None):
        self.runner = runner
        self.value = value
        self.request = request  # (data, url, mimetype), handed over again after a restart
        self.start = 0  # the chain position the child begins at
        self.seq = 0  # numbers the latest hand-over, as the status file names the document at work
        self.pages = 0  # pipe pages its request may take
        self.sent = 0.0  # when it was handed over
        self.errors: list[str] = []  # failures reported by children killed on this document

    def result(self) -> tuple[Prepared | None, list[str]]:
        if self.value is None:
            self.runner.finish(self)
        return self.value


def inline(chain, data: bytes) -> bool:
    """Whether a document is prepared in the worker: small, and every preparator of its chain (as configured,
    not a subclass that may do more) one of :data:`INLINE`."""
    return (len(data) <= INLINE_MAX_BYTES and bool(chain)
            and all(type(spec) is PreparatorSpec and spec.func in INLINE for spec in chain))


class InProcess:
    """No isolation: the preparators run in the worker itself (``preparation.isolate: false``)."""

    owned = True

    def __init__(self, preparators):
        from beamtrawl.transforms.preparators.mime import MimeSniffer

        self.chain = Chain(preparators, MimeSniffer())

    def submit(self, data: bytes, url: str, mimetype: str) -> Ticket:
        return Ticket(value=self.chain.run(data, url, mimetype))

    def prepare(self, data: bytes, url: str, mimetype: str) -> tuple[Prepared | None, list[str]]:
        return self.submit(data, url, mimetype).result()

    def close(self) -> None:
        pass


_RUNNERS: weakref.WeakSet = weakref.WeakSet()


def end_children() -> None:
    """End the preparing children of this process, as its exit would: for a process that ends without
    Python's shutdown (``beamtrawl.runners.local_worker``), so that no child it left preparing lives on."""
    for runner in list(_RUNNERS):
        runner._finalizer()


class Isolated:
    """The preparators in a child process, ``timeout`` seconds per document, ``memory_limit`` bytes of
    address space (0: none). ``submit`` hands a document over and returns at once, so the worker can
    read and sniff the next document while the child prepares this one; up to ``MAX_IN_FLIGHT`` documents
    wait in the pipe, answered in order. Thread-safe; ``owned=False`` when shared by the DoFns of a worker,
    which then do not close it (the child ends with the worker)."""

    def __init__(self, preparators, timeout: float, memory_limit: int, owned: bool = True):
        self.preparators = preparators
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.owned = owned
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self.queue: deque[Ticket] = deque()  # handed over, not answered; the oldest is (or is next) at work
        self.queued_pages = 0
        self.pipe_pages = 0  # capacity of the pipe to the child
        self.seq = 0
        self.answered = 0.0  # when the last answer was read: the child began the next document then or later
        self.status = None  # the file where the child writes where in the chain it is
        self.answers: _Messages | None = None  # from the child at work
        self.local = InProcess(preparators)  # for the documents :func:`inline` allows
        self.lock = threading.Lock()
        self._finalizer = weakref.finalize(self, Isolated._end, self.__dict__)
        _RUNNERS.add(self)

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        if self.status is None:
            self.status = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as this runner
        status = self.status.fileno()
        # -P: "python -m" would put the current folder first on the import path (code run by dropping a file).
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "beamtrawl.transforms.preparators.isolation", str(self.memory_limit), str(status),
             str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, pass_fds=(status,))
        self.pipe_pages = _widen(self.process.stdin.fileno()) // _PAGE
        _widen(self.process.stdout.fileno())  # the child answers without waiting for the worker to read
        self.answers = _Messages(self.process.stdout.fileno())
        _write(self.process.stdin.fileno(), _frame(self.preparators))
        # Start-up (importing the format libraries) is not the first document's time: wait for it apart.
        kind, _ = self.answers.receive(time.monotonic() + max(120.0, self.timeout))
        if kind != "ready":
            raise OSError(f"unexpected first message {kind!r}")

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                stream.close()
            self.process = None
            self.restarts += 1

    def submit(self, data: bytes, url: str, mimetype: str) -> Ticket:
        if inline(self.local.chain.choose(mimetype, url), data):
            return self.local.submit(data, url, mimetype)
        with self.lock:
            ticket = Ticket(self, request=(data, url, mimetype))
            self._hand_over(ticket)
            return ticket

    def _hand_over(self, ticket: Ticket) -> None:
        """Send the ticket's document to the child (started if need be), to prepare from ``ticket.start``.
        A write into a full pipe would wait, with no timeout, for a child that may hang: the oldest documents
        in flight are finished first until this one fits beside them. One larger than the pipe goes alone,
        to a child that is then reading."""
        self.seq += 1
        ticket.seq = self.seq
        message = _frame((*ticket.request, ticket.start, ticket.seq))
        ticket.pages = -(-len(message) // _PAGE)
        while self.queue and (len(self.queue) >= MAX_IN_FLIGHT
                              or self.queued_pages + ticket.pages > self.pipe_pages):
            self._collect()
        if not self.queue and (self.process is None or self.process.poll() is not None):
            self._stop()
            try:
                self._start()
            except (TimeoutError, EOFError, OSError, pickle.UnpicklingError) as err:
                self._stop()
                reason = f"preparation: the preparing process did not start: {type(err).__name__} {err}"
                ticket.errors.append(reason)
                ticket.value = (None, ticket.errors)
                return
        try:
            _write(self.process.stdin.fileno(), message)
        except OSError:
            if self.queue:  # it died on an earlier document: read what it answered, recover, then send this
                while self.queue:
                    self._collect()
                self._hand_over(ticket)
                return
            self.queue.append(ticket)  # it died before beginning this one
            self._lost(self._death())
            return
        ticket.sent = time.monotonic()
        self.queue.append(ticket)
        self.queued_pages += ticket.pages

    def finish(self, ticket: Ticket) -> None:
        """Collect the answers in order up to ``ticket``'s (they stay on their own tickets)."""
        with self.lock:
            while ticket.value is None:
                self._collect()

    def prepare(self, data: bytes, url: str, mimetype: str) -> tuple[Prepared | None, list[str]]:
        return self.submit(data, url, mimetype).result()

    def _collect(self) -> None:
        """Read the answer for the oldest document in flight. Its time started when the child could begin
        it: when it was sent or when the answer before it was read, whichever came last."""
        ticket = self.queue[0]
        try:
            _, (prepared, failures) = self.answers.receive(max(ticket.sent, self.answered) + self.timeout)
        except TimeoutError:
            self._lost(f"timed out after {self.timeout:g} s (the preparing process was killed)")
        except (EOFError, OSError, pickle.UnpicklingError):
            self._lost(self._death())
        else:
            self.answered = time.monotonic()
            self.queue.popleft()
            self.queued_pages -= ticket.pages
            ticket.value = (prepared, ticket.errors + failures)

    def _death(self) -> str:
        """Why the child died (it has, or is about to: its pipe broke); its memory limit named unless a signal that
        comes from outside (a kill, the system's out-of-memory killer) ended it."""
        code = self.process.wait()
        outside = code in (-signal.SIGKILL, -signal.SIGTERM, -signal.SIGINT)
        limit = f" (memory limit {self.memory_limit} bytes)" if self.memory_limit and not outside else ""
        return _exit_reason(code) + limit

    def _lost(self, reason: str) -> None:
        """The child was killed or died on the oldest document in flight: report the preparator at work, and
        let a new child go on with the ones after it (a substitute document when none is left, or none had
        begun). The documents queued behind it died unread with the child: they go to the new one again."""
        queue, self.queue, self.queued_pages = list(self.queue), deque(), 0
        self._stop()
        ticket = queue[0]
        (size,) = _HEADER.unpack(os.pread(self.status.fileno(), _HEADER.size, 0))
        seq, position, failures = json.loads(os.pread(self.status.fileno(), size, _HEADER.size)) if size else (
            0, 0, [])
        chain = chain_for(self.preparators, ticket.request[2], ticket.request[1])
        if seq != ticket.seq:  # killed before a preparator began (e.g. while receiving the document)
            ticket.errors.append(f"preparation: {reason}")
            ticket.value = (None, ticket.errors)
        else:
            ticket.errors += [*failures, f"{chain[position].name}: {reason}"]
            ticket.start = position + 1
            if ticket.start == len(chain):
                ticket.value = (None, ticket.errors)
        for queued in queue:
            if queued.value is None:
                self._hand_over(queued)

    def close(self) -> None:
        with self.lock:
            while self.queue:
                self._collect()
            Isolated._end(self.__dict__)

    @staticmethod
    def _end(state: dict) -> None:
        """End the child: its input closes, it exits (killed if it does not within 5 s)."""
        process = state.get("process")
        if process is None:
            return
        state["process"] = None
        process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def _orphaned(parent: int) -> None:
    """End this process once ``parent`` (the worker) is gone: its timeout is the worker's to keep, so a child left
    behind by a worker that was killed went on with its document alone, up to its memory limit, after the crawl
    had ended. Polled (``PR_SET_PDEATHSIG`` would fire when the worker's thread that started it ends, not the
    worker); a preparator that holds the GIL delays it until it lets go."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    os._exit(1)


def _child(memory_limit: int, status: int, parent: int) -> None:
    import resource

    from beamtrawl.transforms.preparators.html import import_trafilatura
    from beamtrawl.transforms.preparators.mime import MimeSniffer

    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    threading.Thread(target=_orphaned, args=(parent,), name="beamtrawl-orphaned", daemon=True).start()
    requests, replies = os.dup(0), os.dup(1)
    if not logs.debugging():  # what libraries print or log about a document is no news for the terminal
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    logs.route()
    os.dup2(2, 1)  # what preparators print goes to stderr, never into the protocol
    sys.stdout = sys.stderr

    def at_work(seq: int, position: int, failures: list[str]) -> None:
        body = json.dumps([seq, position, failures]).encode()
        os.pwrite(status, _HEADER.pack(len(body)) + body, 0)

    try:
        requests = _Messages(requests)
        chain = Chain(requests.receive(), MimeSniffer())
        import_trafilatura()  # imported at first use elsewhere; here a part of start-up, not of the first document
        _write(replies, _frame(("ready", None)))
        while True:
            data, url, mimetype, start, seq = requests.receive()
            result = chain.run(data, url, mimetype, start,
                               on_try=lambda position, failures, seq=seq: at_work(seq, position, failures))
            _write(replies, _frame(("done", result)))
    except EOFError:
        return


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
