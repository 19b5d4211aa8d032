"""Complete-labelling search: backtracking over IN/OUT/UNDEC with constraint propagation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from claimwatch.core.argue.grounded import IN, OUT, UNDEC

ALL: Final = IN | OUT | UNDEC
_SINGLE: Final = frozenset({IN, OUT, UNDEC})


class SearchLimit(Exception):
    """A computation met its bound (steps or extensions); the message names the bound."""


class Budget:
    """Branch steps the searches of one computation may take in all; SearchLimit beyond."""

    __slots__ = ("left", "total")

    def __init__(self, steps: int) -> None:
        self.total = self.left = steps

    def spend(self) -> None:
        """One more step; SearchLimit once the budget is spent."""
        self.left -= 1
        if self.left < 0:
            raise SearchLimit(f"the labelling search took more than {self.total} steps")


class LabellingSearch:
    """Complete labellings of a framework given as attacker and target lists per index.

    A complete labelling gives each argument IN exactly when all its attackers are OUT, and
    OUT exactly when some attacker is IN; the rest are UNDEC. Each argument holds the set of
    labels still possible (bits IN|OUT|UNDEC). Propagation removes labels that no complete
    labelling within the current sets can give, and forces a label where only one attacker
    can still give the needed support; the search branches on an open argument only when
    propagation is stuck (IN first). Clauses "at least one of these arguments is IN" restrict
    the search further (used to enumerate preferred extensions, see semantics.py).
    """

    def __init__(
        self,
        attackers: Sequence[Sequence[int]],
        targets: Sequence[Sequence[int]],
        budget: Budget | None = None,
    ) -> None:
        #: the steps the search may still take (shared with other searches; None: unbounded)
        self.budget = budget
        self.attackers = attackers
        self.targets = targets
        n = len(attackers)
        self.neighbours: list[tuple[int, ...]] = [
            tuple(sorted(set(attackers[i]) | set(targets[i]))) for i in range(n)
        ]
        #: Branching order: most connected first, then by index (deterministic).
        self.order = sorted(range(n), key=lambda i: (-len(self.neighbours[i]), i))
        self.clauses: list[tuple[int, ...]] = []
        self.clauses_of: list[list[int]] = [[] for _ in range(n)]
        self.self_attacking = [i for i in range(n) if i in targets[i]]
        self.branch_order = self.order

    def add_clause(self, members: Sequence[int]) -> None:
        """Require at least one of `members` to be IN in every labelling found from now on."""
        clause = tuple(sorted(set(members)))
        number = len(self.clauses)
        self.clauses.append(clause)
        for member in clause:
            self.clauses_of[member].append(number)
        self._reorder()

    def pop_clause(self) -> None:
        """Drop the clause added last."""
        number = len(self.clauses) - 1
        for member in self.clauses.pop():
            self.clauses_of[member].remove(number)
        self._reorder()

    def initial(self, allowed: int = ALL) -> bytearray:
        """Every argument may take the labels in `allowed`; self-attackers are never IN."""
        domains = bytearray([allowed]) * len(self.attackers)
        for i in self.self_attacking:
            domains[i] &= ~IN
        return domains

    def labellings(self, domains: bytearray) -> Iterator[bytearray]:
        """Every complete labelling within `domains` that meets the clauses (each a bytearray)."""
        start = bytearray(domains)
        if any(not clause for clause in self.clauses):
            return
        if not self._propagate(start, list(range(len(start))), check_clauses=True):
            return
        stack: list[tuple[bytearray, int, int]] = []
        self._branch(start, stack)
        if not stack:
            yield start
            return
        budget = self.budget
        while stack:
            parent, chosen, label = stack.pop()
            if budget is not None:
                budget.spend()
            child = bytearray(parent)
            child[chosen] = label
            queue = [chosen]
            if label != IN and not all(
                self._clause_ok(child, self.clauses[number], queue)
                for number in self.clauses_of[chosen]
            ):
                continue
            if not self._propagate(child, queue, check_clauses=False):
                continue
            if not self._branch(child, stack):
                yield child

    def first(self, domains: bytearray) -> bytearray | None:
        """One complete labelling within `domains`, or None (IN is tried first at each branch)."""
        return next(self.labellings(domains), None)

    # ------------------------------------------------------------------ internals

    def _reorder(self) -> None:
        """Branch on the members of the newest clause first: it is what the search must meet."""
        if not self.clauses:
            self.branch_order = self.order
            return
        members = set(self.clauses[-1])
        first = [i for i in self.order if i in members]
        self.branch_order = first + [i for i in self.order if i not in members]

    def _branch(self, domains: bytearray, stack: list[tuple[bytearray, int, int]]) -> bool:
        """Push the alternatives of the first open argument; False when all are decided."""
        for i in self.branch_order:
            d = domains[i]
            if d not in _SINGLE:
                for label in (UNDEC, OUT, IN):  # popped IN first
                    if d & label:
                        stack.append((domains, i, label))
                return True
        return False

    def _propagate(self, dom: bytearray, queue: list[int], *, check_clauses: bool) -> bool:
        """Narrow `dom` to a fixpoint from the changed arguments in `queue`; False on a conflict."""
        attackers, targets, neighbours = self.attackers, self.targets, self.neighbours
        clauses, clauses_of = self.clauses, self.clauses_of
        if check_clauses:
            for clause in clauses:
                if not self._clause_ok(dom, clause, queue):
                    return False
        queued = set(queue)
        while queue:
            changed = queue.pop()
            queued.discard(changed)
            for arg in (changed, *neighbours[changed]):
                before = dom[arg]
                after = self._revise(dom, arg)
                if after == 0:
                    return False
                if after != before:
                    dom[arg] = after
                    if arg not in queued:
                        queued.add(arg)
                        queue.append(arg)
                    if before & IN and not after & IN:
                        for number in clauses_of[arg]:
                            if not self._clause_ok(dom, clauses[number], queue):
                                return False
            # what an argument forces depends on its own labels and its attackers' labels only
            for arg in (changed, *targets[changed]):
                if not self._force(dom, arg, attackers[arg], queue, queued):
                    return False
        return True

    def _revise(self, dom: bytearray, arg: int) -> int:
        """`arg`'s label set less the labels its attackers and targets no longer allow."""
        can_in, some_in, some_undec, undec_blocked = True, False, False, False
        for b in self.attackers[arg]:
            db = dom[b]
            if not db & OUT:
                can_in = False  # IN needs every attacker OUT
            if db & IN:
                some_in = True  # OUT needs an attacker that can be IN
                if db == IN:
                    undec_blocked = True
            if db & UNDEC:
                some_undec = True  # UNDEC needs an UNDEC attacker
        for c in self.targets[arg]:
            dc = dom[c]
            if not dc & OUT:
                can_in = False  # an IN argument makes what it attacks OUT
            if dc == IN:
                undec_blocked = True  # an IN target needs this attacker OUT
        d = dom[arg]
        if not can_in:
            d &= ~IN
        if not some_in:
            d &= ~OUT
        if undec_blocked or not some_undec:
            d &= ~UNDEC
        return d

    def _clause_ok(self, dom: bytearray, clause: tuple[int, ...], queue: list[int]) -> bool:
        candidate = -1
        for member in clause:
            if dom[member] & IN:
                if candidate >= 0:
                    return True
                candidate = member
        if candidate < 0:
            return False
        if dom[candidate] != IN:
            dom[candidate] = IN
            queue.append(candidate)
        return True

    def _force(
        self,
        dom: bytearray,
        arg: int,
        attackers: Sequence[int],
        queue: list[int],
        queued: set[int],
    ) -> bool:
        """Apply what `arg`'s current label set demands of its attackers and targets."""
        d = dom[arg]
        narrowed: list[tuple[int, int]] = []
        if d == IN:
            narrowed += [(b, OUT) for b in attackers]
            narrowed += [(c, OUT) for c in self.targets[arg]]
        elif not d & OUT:  # IN or UNDEC: no attacker may be IN
            narrowed += [(b, OUT | UNDEC) for b in attackers]
            if d == UNDEC:  # some attacker must be UNDEC
                undec = [b for b in attackers if dom[b] & UNDEC]
                if len(undec) == 1:
                    narrowed.append((undec[0], UNDEC))
        elif d == OUT:  # some attacker must be IN
            can_in = [b for b in attackers if dom[b] & IN]
            if len(can_in) == 1:
                narrowed.append((can_in[0], IN))
        elif not d & IN:  # OUT or UNDEC: some attacker is not OUT
            not_out = [b for b in attackers if dom[b] & (IN | UNDEC)]
            if len(not_out) == 1:
                narrowed.append((not_out[0], IN | UNDEC))
        for other, mask in narrowed:
            before = dom[other]
            after = before & mask
            if after == before:
                continue
            if after == 0:
                return False
            dom[other] = after
            if before & IN and not after & IN:
                for number in self.clauses_of[other]:
                    if not self._clause_ok(dom, self.clauses[number], queue):
                        return False
            if other not in queued:
                queued.add(other)
                queue.append(other)
        return True
