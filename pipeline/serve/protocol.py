"""uvicorn's h11 protocol with a deadline for a request's head.

uvicorn times out a connection only while it is idle after an answer (its keep-alive): a client that
sends a head one byte at a time, or opens a connection and sends nothing, holds it (and its memory and
file descriptor) for ever, and a few hundred such clients take every descriptor (slowloris). Here the
whole request, its head and any body, must arrive within HEAD_SECONDS of the connection opening or of
the previous answer ending; else the connection is closed. The search answers GET only, so a body is never
needed: a head announcing a large body that then trickles in is held to the same deadline.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: seconds a client has to send a request's whole head (a browser sends it at once)
HEAD_SECONDS = 10.0


class BoundedHeadProtocol(H11Protocol):
    """H11Protocol closing a connection whose request takes longer than HEAD_SECONDS to arrive."""

    head_seconds = HEAD_SECONDS
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):  # the request is in (or the connection ends)
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        """Time the next request, unless one is in already (pipelined) or the connection is ending; a body
        still arriving after the answer (to a request with a body) keeps its request's deadline."""
        if self.conn.their_state is h11.SEND_BODY:
            return
        self._stop_waiting()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._head_deadline = self.loop.call_later(self.head_seconds, self._head_too_slow)

    def _stop_waiting(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()
