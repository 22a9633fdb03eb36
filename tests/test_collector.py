"""transforms/collector.py: the cyclic collector paused while readers in several threads parse answers."""

import gc
import threading

from beamtrawl.transforms import collector


def test_the_collector_runs_again_when_the_last_overlapping_reader_leaves_even_after_a_failure():
    assert gc.isenabled()
    inside, leave = threading.Event(), threading.Event()

    def reader():
        with collector.paused():
            inside.set()
            leave.wait(10)

    other = threading.Thread(target=reader)
    other.start()
    inside.wait(10)
    try:
        with collector.paused():
            raise ValueError("a failed range")
    except ValueError:
        pass
    assert not gc.isenabled()  # the other reader is still inside
    leave.set()
    other.join(10)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
