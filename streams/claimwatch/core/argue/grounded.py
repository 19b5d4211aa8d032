"""Grounded labelling in O(arguments + attacks): propagation from the unattacked arguments."""

from __future__ import annotations

from typing import Final

from claimwatch.core.argue.framework import Framework

#: Labels as bits, so a set of still-possible labels is a small int (see search.py).
IN: Final = 1
OUT: Final = 2
UNDEC: Final = 4


def grounded_labels(framework: Framework) -> bytearray:
    """The grounded labelling: IN, OUT or UNDEC per argument index.

    Each argument keeps a count of its attackers not yet OUT. Arguments whose count is zero are
    IN; whatever an IN argument attacks turns OUT, which lowers the counts of what that one
    attacks. Every argument turns IN or OUT at most once and every attack is followed at most
    twice, so the cost is linear. The rest is UNDEC.
    """
    targets = framework.targets
    live = [len(row) for row in framework.attackers]
    labels = bytearray(len(live))
    stack = [i for i, count in enumerate(live) if count == 0]
    for i in stack:
        labels[i] = IN
    while stack:
        winner = stack.pop()
        for loser in targets[winner]:
            if labels[loser]:
                continue  # already OUT (it cannot be IN: `winner` attacks it)
            labels[loser] = OUT
            for freed in targets[loser]:
                live[freed] -= 1
                if live[freed] == 0 and not labels[freed]:
                    labels[freed] = IN
                    stack.append(freed)
    return labels.replace(b"\x00", bytes([UNDEC]))


def grounded_extension(framework: Framework) -> list[int]:
    """Indices of the arguments in the grounded extension, ascending."""
    return [i for i, label in enumerate(grounded_labels(framework)) if label == IN]
