"""Where the claims edge keeps fact states: a bytes table (the worker), or objects (replay)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

from claimwatch.core.claim import Claim, memo_of
from claimwatch.core.state import FactState, pack
from claimwatch.wire.codec import dumps, fragment, loads

#: Largest stored fact state (key and value), below the producer's request limit (Faust's
#: producer_max_request_size, 1,000,000 bytes) with room for the changelog record's framing.
#: The core keeps a fact's claims within a byte budget (see claimwatch.core.size), so a state
#: reaches it only by a fault; that fact is then set aside, never the process.
MAX_STATE_BYTES = 900_000

#: A fact whose state could not be written, the state, and why (see `TableFacts.flush`).
Unwritten = tuple[str, FactState, Exception]


class StateTooLarge(ValueError):
    """A fact state whose stored form would pass MAX_STATE_BYTES."""


def encode_state(key: str, state: FactState) -> bytes:
    """A state's stored form; StateTooLarge past MAX_STATE_BYTES."""
    raw = dumps(state.to_obj(stored_form))
    if len(key) + len(raw) > MAX_STATE_BYTES:
        raise StateTooLarge(
            f"fact state of {len(raw)} bytes exceeds the {MAX_STATE_BYTES}-byte limit"
        )
    return raw


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
        #: states evicted from the cache whose writing failed, for the next `flush` to report
        self._unwritten: list[Unwritten] = []
        #: stored states `states_of` could not read: (key, error), for `unreadable` to report
        self._unreadable: list[tuple[str, Exception]] = []

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

    def flush(self) -> list[Unwritten]:
        """Write every fact changed since the last flush to the table.

        Each fact on its own: one whose state cannot be encoded (or is too large) is not
        written, and is returned with the error, for its owner to set it aside; the others
        are written.
        """
        failed, self._unwritten = self._unwritten, []
        for key in sorted(self._dirty):
            state = self._cache.get(key)
            if state is not None:
                try:
                    raw = encode_state(key, state)
                except Exception as exc:
                    failed.append((key, state, exc))
                    continue
                self.table[key.encode()] = raw
        self._dirty.clear()
        return failed

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self._cache or key.encode() in self.table)

    def _remember(self, key: str, state: FactState) -> None:
        self._cache[key] = state
        self._cache.move_to_end(key)
        if len(self._cache) > self._cache_size:
            old, evicted = self._cache.popitem(last=False)
            if old in self._dirty:
                self._dirty.discard(old)
                try:
                    self.table[old.encode()] = encode_state(old, evicted)
                except Exception as exc:
                    self._unwritten.append((old, evicted, exc))

    def clear_cache(self) -> None:
        """Forget decoded states (after a rebalance the table may have been restored anew)."""
        unwritten = self.flush()
        self._cache.clear()
        self._unwritten = unwritten  # reported by the next flush

    def discard(self) -> None:
        """Forget decoded states and unwritten changes (a record's handling failed midway)."""
        self._dirty.clear()
        self._cache.clear()
        self._unwritten.clear()

    def __iter__(self) -> Iterator[str]:
        return (k.decode() for k in list(self.table) if not k.startswith(b"\x00"))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def states_of(self, partition: int) -> Iterator[FactState]:
        """Every stored fact of one partition."""
        entries = self._items_of(partition) if self._items_of else self.table.items()
        for key, raw in list(entries):
            if not key.startswith(b"\x00"):
                try:
                    state = self._cache.get(key.decode()) or FactState.from_obj(loads(raw))
                except Exception as exc:  # that fact alone: see `unreadable`
                    self._unreadable.append((key.decode("utf-8", "replace"), exc))
                    continue
                if state.partition == partition:
                    yield state

    def unreadable(self) -> list[tuple[str, Exception]]:
        """The stored states `states_of` skipped because they do not decode (then forgotten)."""
        found, self._unreadable = self._unreadable, []
        return found


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

    def flush(self) -> list[Unwritten]:
        """Nothing to write: the objects are the state."""
        return []

    def discard(self) -> None:
        """Nothing to forget: the objects are the state."""

    def unreadable(self) -> list[tuple[str, Exception]]:
        """Objects always read."""
        return []
