"""The buffered writer: batches off the caller's path, bounded memory, nothing left behind on close."""

from __future__ import annotations

import threading

import pytest

from mcp_platform.activity.writer import BufferedWriter

WAIT = 5.0


class Sink:
    def __init__(self, *, fail: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail
        self.arrived = threading.Event()

    def __call__(self, items: list[int]) -> None:
        if self.fail:
            raise RuntimeError("database down")
        self.batches.append(items)
        self.arrived.set()


def writer(sink: Sink, *, capacity: int = 100, batch: int = 10, interval: float = 60.0) -> BufferedWriter[int]:
    return BufferedWriter(sink=sink, capacity=capacity, batch=batch, interval=interval, name="test-writer")


def test_a_full_batch_is_written_by_the_thread_without_waiting_for_the_interval() -> None:
    sink = Sink()
    buffered = writer(sink, batch=3)
    for item in range(3):
        assert buffered.add(item)
    assert sink.arrived.wait(WAIT), "the writer thread wrote the full batch"
    assert sink.batches == [[0, 1, 2]]
    buffered.close()


def test_flush_writes_in_batches_of_the_configured_size() -> None:
    sink = Sink()
    buffered = BufferedWriter(sink=sink, capacity=100, batch=4, interval=60.0, name="test-writer", threaded=False)
    for item in range(10):
        buffered.add(item)
    assert buffered.flush() == 10
    assert [len(batch) for batch in sink.batches] == [4, 4, 2]


def test_a_full_buffer_drops_and_counts_instead_of_blocking(caplog: pytest.LogCaptureFixture) -> None:
    sink = Sink()
    buffered = writer(sink, capacity=5, batch=1000)
    accepted = [buffered.add(item) for item in range(8)]
    assert accepted == [True] * 5 + [False] * 3
    assert buffered.dropped == 3
    buffered.close()
    assert sink.batches == [[0, 1, 2, 3, 4]]
    assert "3 records dropped" in caplog.text


def test_close_writes_what_is_buffered() -> None:
    sink = Sink()
    buffered = writer(sink, batch=1000)
    buffered.add(1)
    buffered.add(2)
    buffered.close()
    assert sink.batches == [[1, 2]] and buffered.pending() == 0


def test_a_failing_sink_is_counted_as_dropped_and_the_writer_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    sink = Sink(fail=True)
    buffered = writer(sink, batch=1000)
    buffered.add(1)
    buffered.close()
    assert buffered.dropped == 1
    sink.fail = False
    buffered.add(2)
    assert buffered.flush() == 1
    assert sink.batches == [[2]]
