"""A serving process's GIL switch interval: short enough that its event loop never waits long for a busy thread."""

from __future__ import annotations

import statistics
import sys
import threading
import time

from jarvis.cli.gil import SWITCH_SECONDS, share_gil_promptly


def typical_wait_for_the_gil(spinning: threading.Event) -> float:
    """How long this thread typically waits to run again after a sleep of no time (which lets go of the GIL, as
    an event loop's system calls do) while another thread runs pure Python: the median of 100 (robust to the
    machine's own hiccups)."""
    spinning.wait()
    waits = []
    for _ in range(100):
        asked = time.perf_counter()
        time.sleep(0)
        waits.append(time.perf_counter() - asked)
    return statistics.median(waits)


def spin(spinning: threading.Event, stop: threading.Event) -> None:
    spinning.set()
    while not stop.is_set():
        sum(range(100))


def waits_beside_a_spinning_thread() -> float:
    spinning, stop = threading.Event(), threading.Event()
    spinner = threading.Thread(target=spin, args=(spinning, stop))
    spinner.start()
    try:
        return typical_wait_for_the_gil(spinning)
    finally:
        stop.set()
        spinner.join()


def test_the_interval_is_shortened_and_the_old_one_returned() -> None:
    before = sys.getswitchinterval()
    try:
        assert share_gil_promptly() == before
        assert sys.getswitchinterval() == SWITCH_SECONDS
    finally:
        sys.setswitchinterval(before)


def test_a_thread_that_lets_go_of_the_gil_gets_it_back_sooner() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # CPython's default
        by_default = waits_beside_a_spinning_thread()
        share_gil_promptly()
        shortened = waits_beside_a_spinning_thread()
    finally:
        sys.setswitchinterval(before)
    assert by_default > 0.004  # each let-go costs about the whole default interval
    assert shortened < 0.002
