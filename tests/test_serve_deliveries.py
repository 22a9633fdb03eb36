"""serve's bounded delivery threads (pipeline/serve/deliveries.py) on a real pipe whose writer stops: a read that
never ends is Late within the deadline, and the stream is closed only once the read that ran late returns; an
opened stream that arrives after its deadline is closed, not leaked. (A store that hangs before the document
opens is tested end to end in test_object_store_delivery.py.)"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from beamtrawl.pipeline.serve.deliveries import Deliveries, Late


def test_a_stream_that_stops_in_the_middle_is_late_and_closed_once_its_read_returns():
    reader, writer = os.pipe()
    stream = os.fdopen(reader, "rb", buffering=0)
    os.write(writer, b"x" * 1000)
    deliveries = Deliveries(1.0)

    async def read_all() -> list[bytes]:
        got = []
        async for chunk in deliveries.chunks(stream, 4096):
            got.append(chunk)
        return got

    started = time.monotonic()
    with pytest.raises(Late, match="no answer within 1 s"):
        asyncio.run(read_all())
    assert time.monotonic() - started < 5 and not stream.closed  # a thread still reads it
    os.write(writer, b"late")
    os.close(writer)
    deadline = time.monotonic() + 5
    while not stream.closed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stream.closed
    deliveries.close()


def test_a_document_opened_after_its_deadline_is_closed_not_leaked(tmp_path):
    reader, writer = os.pipe()
    (tmp_path / "doc.txt").write_bytes(b"puffins")
    opened = []

    def slow_open():
        os.read(reader, 1)  # the store's answer, late
        opened.append(open(tmp_path / "doc.txt", "rb"))  # noqa: SIM115 - closed by Deliveries
        return opened[0]

    deliveries = Deliveries(1.0)
    with pytest.raises(Late):
        asyncio.run(deliveries.run(slow_open))
    os.write(writer, b"!")
    deadline = time.monotonic() + 5
    while not (opened and opened[0].closed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert opened and opened[0].closed
    assert asyncio.run(deliveries.run(len, b"four")) == 4  # the thread came back
    deliveries.close()
    os.close(reader)
    os.close(writer)
