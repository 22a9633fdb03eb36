"""The threads that open and read documents for searchers (``/document``, ``/thumbnail``), each call bounded.

A store may accept the connection and never answer. The searcher then waits ``seconds`` at most for the
document to open and for each part of it (:class:`Late` past that: serve answers 504, or, once the document
began, ends the connection unfinished, so a cut document is never taken for a whole one). The thread stays until
the source's own clients give up, which serve bounds by the same seconds (``SourceSettings.deadline``); these
threads are serve's own, so a hanging store cannot take the threads sign-ins and searches use.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor

from beamtrawl.transforms.sources.base import NotIndexed

#: Documents opened or read at once; more wait their turn (within their deadline).
DELIVERY_THREADS = 16
#: Seconds a searcher waits for a document to open, and then for each part of it (serve --document-seconds).
DOCUMENT_SECONDS = 30.0


class Late(Exception):
    """A call passed its deadline: still running, or it failed only then (a client giving up at its own bound);
    ``str()`` is what it last said, for the log."""


class Deliveries:
    """Runs a delivery's blocking calls on DELIVERY_THREADS threads, each within ``seconds``."""

    def __init__(self, seconds: float, size: int = DELIVERY_THREADS):
        self.seconds = seconds
        self._pool = ThreadPoolExecutor(size, thread_name_prefix="deliver")

    async def run(self, work, *args):
        """``work(*args)``'s result, or :class:`Late`. What it returns after the deadline is closed, if it can be."""
        return await self._within(self._pool.submit(work, *args), _close_result)

    async def chunks(self, stream, size: int) -> AsyncIterator[bytes]:
        """``stream``'s bytes in ``size`` pieces, each read within the deadline; the stream is closed at the end,
        when the reader leaves, or once a read that ran late ends (never while a thread reads it)."""
        reading: Future | None = None
        try:
            while True:
                reading = self._pool.submit(stream.read, size)
                chunk = await self._within(reading)
                if not chunk:
                    return
                yield chunk
        finally:
            if reading is None:
                stream.close()
            else:
                reading.add_done_callback(lambda _: stream.close())

    async def _within(self, work: Future, late_result=None):
        started = time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.wrap_future(work), self.seconds)  # cancels it if not begun
        except TimeoutError:
            if late_result is not None:
                work.add_done_callback(late_result)
            raise Late(f"no answer within {self.seconds:g} s") from None
        except (FileNotFoundError, NotIndexed):  # answers, however late
            raise
        except Exception as err:
            if time.monotonic() - started >= self.seconds:
                raise Late(str(err)[:300] or type(err).__name__) from None
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _close_result(done: Future) -> None:
    if not done.cancelled() and done.exception() is None and hasattr(done.result(), "close"):
        done.result().close()
