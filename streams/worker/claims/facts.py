"""Where the claims edge keeps fact states: a bytes table (the worker), or objects (replay)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

from streams.core.claim import Claim, memo_of
from streams.core.state import FactState, pack
from streams.wire.codec import dumps, fragment, loads


class TableFacts(MutableMapping[str, FactState]):
    """FactState values over a bytes -> bytes table (a Faust table, or a dict in tests).

    Decoded states are kept in a bounded cache, so reads of recently used facts skip the
    decoding; writes are collected while one input record is processed and reach the table
    (and so its changelog) once per fact when the record is done (`flush`), instead of once
    per step that touched the fact.
    """

    #: claims stay live here between records (a bounded cache): they keep a memo
    memo = True

    def __init__(
        self,
        table: MutableMapping[bytes, bytes],
        cache_size: int = 50_000,
        items_of: Callable[[int], Iterable[tuple[bytes, bytes]]] | None = None,
    ) -> None:
        self.table = table
        #: the entries of one partition, where the store can list them apart (else all)
        self._items_of = items_of
        self._cache: OrderedDict[str, FactState] = OrderedDict()
        self._cache_size = cache_size
        self._dirty: set[str] = set()

    def __getitem__(self, key: str) -> FactState:
        state = self._cache.get(key)
        if state is not None:
            self._cache.move_to_end(key)
            return state
        state = FactState.from_obj(loads(self.table[key.encode()]))
        self._remember(key, state)
        return state

    def __setitem__(self, key: str, state: FactState) -> None:
        self._remember(key, state)
        self._dirty.add(key)

    def __delitem__(self, key: str) -> None:
        self._cache.pop(key, None)
        self._dirty.discard(key)
        if key.encode() in self.table:
            del self.table[key.encode()]

    def flush(self) -> None:
        """Write every fact changed since the last flush to the table."""
        for key in sorted(self._dirty):
            state = self._cache.get(key)
            if state is not None:
                self.table[key.encode()] = dumps(state.to_obj(stored_form))
        self._dirty.clear()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self._cache or key.encode() in self.table)

    def _remember(self, key: str, state: FactState) -> None:
        self._cache[key] = state
        self._cache.move_to_end(key)
        if len(self._cache) > self._cache_size:
            old, evicted = self._cache.popitem(last=False)
            if old in self._dirty:
                self.table[old.encode()] = dumps(evicted.to_obj(stored_form))
                self._dirty.discard(old)

    def clear_cache(self) -> None:
        """Forget decoded states (after a rebalance the table may have been restored anew)."""
        self.flush()
        self._cache.clear()

    def discard(self) -> None:
        """Forget decoded states and unwritten changes (a record's handling failed midway)."""
        self._dirty.clear()
        self._cache.clear()

    def __iter__(self) -> Iterator[str]:
        return (k.decode() for k in list(self.table) if not k.startswith(b"\x00"))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def states_of(self, partition: int) -> Iterator[FactState]:
        """Every stored fact of one partition."""
        entries = self._items_of(partition) if self._items_of else self.table.items()
        for key, raw in list(entries):
            if not key.startswith(b"\x00"):
                state = self._cache.get(key.decode()) or FactState.from_obj(loads(raw))
                if state.partition == partition:
                    yield state


def stored_form(claim: Claim) -> Any:
    """A claim's packed form, serialized the first time its fact is written, then reused.

    A live claim is written again with its fact at every change of the fact (every claim
    of the fact, every decision): its part of the record is made once.
    """
    memo = memo_of(claim)
    form = memo.stored
    if form is None:
        form = memo.stored = fragment(pack(claim))
    return form


class MemoryFacts(dict[str, FactState]):
    """FactState values kept as objects (replay, tests): nothing to encode."""

    #: every claim of a replayed file is held here: no memo, for the memory's sake
    memo = False

    def states_of(self, partition: int) -> Iterator[FactState]:
        """Every stored fact of one partition."""
        return (s for s in self.values() if s.partition == partition)

    def clear_cache(self) -> None:
        """Nothing is cached: the objects are the state."""

    def flush(self) -> None:
        """Nothing to write: the objects are the state."""

    def discard(self) -> None:
        """Nothing to forget: the objects are the state."""
