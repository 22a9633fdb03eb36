"""The ASGI middleware every answer passes: the security headers, and the request log."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

#: The page's own policy: its style sheet and nothing else; forms post only here; no frames.
PAGE_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'")
SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    # no cache (a browser's, a caching proxy's in front of a trusted header) may keep what one
                    # searcher's groups showed and hand it to the next
                    (b"cache-control", b"no-store")]
_PAGE_CSP_HEADER = (b"content-security-policy", PAGE_CSP.encode())


class SecurityHeaders:
    """ASGI middleware: every answer carries SECURITY_HEADERS, and a page without a policy of its own
    (documents bring theirs) gets PAGE_CSP."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [h for h in SECURITY_HEADERS if h[0] not in present]
                if b"content-security-policy" not in present:
                    extra.append(_PAGE_CSP_HEADER)
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)
        await self.app(scope, receive, sending)


access_log = logging.getLogger("beamtrawl.serve.access")


class AccessLog:
    """ASGI middleware: one line per request in the request log (``beamtrawl.serve.access``): the client
    address, the signed-in user ("-" for anonymous), method, path, status, bytes and milliseconds. The query
    string is left out (it holds what people search for) and so is every header: a password never gets in.
    Each line starts with the time (UTC)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, answer = time.perf_counter(), {"status": 500, "bytes": 0}

        async def sending(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["bytes"] += len(message.get("body", b""))
            await send(message)
        try:
            await self.app(scope, receive, sending)
        finally:
            peer = (scope.get("client") or ("-",))[0]
            user = scope.get("state", {}).get("user") or "-"
            access_log.info("%s %s %s %s %s %d %d %.0fms", datetime.now(UTC).isoformat(timespec="milliseconds"),
                            peer, _printable(user), scope["method"],
                            _printable(scope["path"])[:500], answer["status"], answer["bytes"],
                            (time.perf_counter() - started) * 1000)


def _printable(text: str) -> str:
    """A request's value as one log line's field: no spaces or control characters (they could forge lines)."""
    return "".join(c if c.isprintable() and not c.isspace() else f"%{ord(c) & 0xFF:02X}" for c in text)
