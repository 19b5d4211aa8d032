"""The collector policies: the worker's (full collections on a timer), a one-pass command's."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest
from claimwatch.worker import collector


@pytest.fixture
def restored() -> Iterator[None]:
    """Python's collector as it was before the test (thresholds, nothing frozen)."""
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restored")
@pytest.mark.parametrize("every_s", [0.0, -1.0])
def test_no_interval_keeps_pythons_policy(every_s: float) -> None:
    """0 (or less) changes nothing: the same thresholds, nothing frozen."""
    before = gc.get_threshold()
    assert (False, before, 0) == (
        collector.tune(every_s),
        gc.get_threshold(),
        gc.get_freeze_count(),
    )


@pytest.mark.usefixtures("restored")
def test_tuned_freezes_what_exists_and_never_collects_the_oldest_itself() -> None:
    """The young generations keep their thresholds; the oldest is left to the timer."""
    young, middle, _ = gc.get_threshold()
    assert collector.tune(300.0)
    assert ((young, middle, collector.NEVER), True) == (
        gc.get_threshold(),
        gc.get_freeze_count() > 0,
    )


@pytest.mark.usefixtures("restored")
def test_a_young_cycle_is_still_collected_when_tuned() -> None:
    """Short-lived reference cycles made after tuning are freed by the young collections."""
    collector.tune(300.0)

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    marker = id(a)
    del a, b
    gc.collect(1)
    assert marker not in {id(o) for o in gc.get_objects() if isinstance(o, Node)}


def test_a_slow_full_collection_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full collection longer than SLOW_S says so in the log, with its duration."""
    monkeypatch.setattr(collector, "SLOW_S", -1.0)
    with caplog.at_level(logging.WARNING, logger=collector.__name__):
        took = collector.collect_full()
    assert took >= 0.0
    assert ["full garbage collection took"] == [
        r.getMessage()[:28] for r in caplog.records if r.name == collector.__name__
    ]


@pytest.mark.usefixtures("restored")
def test_one_pass_turns_full_collections_off_and_back_on() -> None:
    """Inside the block the oldest generation never collects by itself; after it, as before."""
    before = gc.get_threshold()
    with collector.one_pass():
        inside = gc.get_threshold()
    assert ((before[0], before[1], collector.NEVER), before) == (inside, gc.get_threshold())


@pytest.mark.usefixtures("restored")
def test_one_pass_puts_the_thresholds_back_when_the_block_fails() -> None:
    """A command that fails inside the block leaves Python's collector as it found it."""
    before = gc.get_threshold()
    with pytest.raises(KeyError), collector.one_pass():
        raise KeyError("boom")
    assert before == gc.get_threshold()
