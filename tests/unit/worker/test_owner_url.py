"""Which worker answers a key's pages: found from the assignment, never from producer metadata."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.forwarding import _owner_url

NAMES = TopicNames("t.")
HOSTS = {"http://a:6066": [0, 2], "http://b:6067": [1, 3]}


class Assignor:
    """The part of Faust's assignor the lookup uses: the hosts of a changelog's partitions."""

    def __init__(self, hosts: dict[str, list[int]]) -> None:
        self.hosts = hosts

    def table_metadata(self, topic: str) -> dict[str, dict[str, list[int]]]:
        return {url: {topic: parts} for url, parts in self.hosts.items()}


def app_and_pipe(hosts: dict[str, list[int]]) -> tuple[Any, Any]:
    """An app with an assignor and no producer at all, and a pipeline of 4 partitions."""
    app = SimpleNamespace(assignor=Assignor(hosts))
    pipe = SimpleNamespace(names=NAMES, settings=SimpleNamespace(partitions=4))
    return app, pipe


def _key_of(partition: int) -> bytes:
    return next(
        k
        for k in (f"invoice:{n}|status".encode() for n in range(100))
        if partition_for(k, 4) == partition
    )


@pytest.mark.parametrize("partition", [0, 1, 2, 3])
def test_the_owner_is_the_host_assigned_the_keys_partition(partition: int) -> None:
    """The key's partition (as every per-fact record is written) names its host."""
    app, pipe = app_and_pipe(HOSTS)
    expected = next(url for url, parts in HOSTS.items() if partition in parts)
    assert expected == _owner_url(app, pipe, _key_of(partition))


def test_no_owner_is_known_before_the_assignment() -> None:
    """No host holds the partition yet: None (the page answers 503), not an exception."""
    app, pipe = app_and_pipe({})
    assert None is _owner_url(app, pipe, _key_of(0))
