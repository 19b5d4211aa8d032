"""Verdict decisions: arguments of policy checks, attacks from kind rules, a decision, a reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from claimwatch.core.argue.framework import Framework
from claimwatch.core.argue.grounded import IN, OUT, grounded_labels
from claimwatch.core.argue.search import SearchLimit
from claimwatch.core.argue.semantics import Bounds, Semantics, extensions

#: Decisions a check can argue for, most restrictive first: the tie rule picks the first present.
RESTRICTIVENESS: Final = ("deny", "modify", "allow")
#: What the caller should do for each decision; `undecided` always escalates.
ACTIONS: Final = {"deny": "block", "modify": "modify", "allow": "proceed", "undecided": "escalate"}
ATTACK_TYPES: Final = ("rebut", "undercut", "undermine")
#: The documented tie rule.
TIE_RULE: Final = "the most restrictive decision wins (deny > modify > allow)"


@dataclass(frozen=True, slots=True)
class VerdictArgument:
    """One check's signal as an argument: its id, kind, claim, strength and decision."""

    id: str
    check: str
    kind: str
    claim: str
    strength: float
    decision: str


@dataclass(frozen=True, slots=True)
class AttackRule:
    """Every argument of `attacker_kind` attacks every other argument of `attacked_kind`."""

    attacker_kind: str
    attacked_kind: str
    type: str


@dataclass(frozen=True, slots=True)
class Attack:
    """One attack of the graph, with the type of the rule that made it."""

    attacker: str
    attacked: str
    type: str


@dataclass(frozen=True, slots=True)
class VerdictOutcome:
    """The decision for one request and everything an auditor needs to re-check it."""

    decision: str
    action: str
    semantics: str
    accepted: list[str]
    extensions: list[list[str]]
    labels: dict[str, str]
    attacks: list[Attack]
    tie: bool
    reason: str


def attacks_from_rules(
    arguments: Sequence[VerdictArgument], rules: Iterable[AttackRule]
) -> list[Attack]:
    """The attacks the rules give between these arguments, sorted; never an argument on itself.

    When two rules relate the same pair of kinds, the first rule's type is kept.
    """
    by_kind: dict[str, list[str]] = {}
    for argument in arguments:
        by_kind.setdefault(argument.kind, []).append(argument.id)
    made: dict[tuple[str, str], str] = {}
    for rule in rules:
        for attacker in by_kind.get(rule.attacker_kind, ()):
            for attacked in by_kind.get(rule.attacked_kind, ()):
                if attacker != attacked:
                    made.setdefault((attacker, attacked), rule.type)
    return [Attack(a, b, kind) for (a, b), kind in sorted(made.items())]


def decide(
    arguments: Sequence[VerdictArgument],
    rules: Iterable[AttackRule],
    semantics: Semantics | str = Semantics.GROUNDED,
    bounds: Bounds | None = None,
) -> VerdictOutcome:
    """Build the framework, compute the extensions of `semantics` and map them to a decision.

    One extension decides by the decisions of its arguments; when they disagree, `TIE_RULE`
    applies. An empty extension is `undecided`. With several extensions the decision is their
    common decision, else `undecided`; with none (stable semantics can have none) it is
    `undecided`. `undecided` escalates: never a silent allow. `accepted` lists the arguments
    in every extension; `labels` is the grounded labelling (in, out, undec), for the audit.
    With `bounds`, a framework whose extensions exceed them is `undecided`, the bound named.
    """
    kind = Semantics(semantics)
    ids = [argument.id for argument in arguments]
    if len(set(ids)) != len(ids):
        raise ValueError("argument ids must be unique within a request")
    for argument in arguments:
        if argument.decision not in RESTRICTIVENESS:
            raise ValueError(
                f"argument {argument.id!r}: decision {argument.decision!r} is not "
                f"one of {', '.join(RESTRICTIVENESS)}"
            )
    attacks = attacks_from_rules(arguments, rules)
    framework = Framework.build(ids, [(a.attacker, a.attacked) for a in attacks])
    limited: str | None = None
    try:
        found = extensions(framework, kind, bounds)
    except SearchLimit as exc:
        found, limited = [], f"{exc} (the bound of one verdict); escalate"
    common = set(found[0]).intersection(*found[1:]) if found else set()
    named = [framework.named(ext) for ext in found]
    labels = {
        framework.names[i]: {IN: "in", OUT: "out"}.get(label, "undec")
        for i, label in enumerate(grounded_labels(framework))
    }
    by_id = {argument.id: argument for argument in arguments}

    def verdict(decision: str, tie: bool, reason: str) -> VerdictOutcome:
        return VerdictOutcome(
            decision,
            ACTIONS[decision],
            kind.value,
            framework.named(common),
            named,
            labels,
            attacks,
            tie,
            reason,
        )

    if limited is not None:
        return verdict("undecided", False, limited)
    if not named:
        return verdict("undecided", False, f"no {kind} extension exists; escalate")
    outcomes = [_decide_one([by_id[name] for name in ext]) for ext in named]
    tie = any(tied for _, tied, _ in outcomes)
    decisions = {decision for decision, _, _ in outcomes}
    if len(named) == 1:
        decision, _, why = outcomes[0]
        return verdict(decision, tie, f"{kind} extension {_set(named[0])}: {why}")
    if len(decisions) > 1:
        listed = "; ".join(
            f"{_set(ext)} -> {decision}"
            for ext, (decision, _, _) in zip(named, outcomes, strict=True)
        )
        return verdict(
            "undecided", tie, f"the {len(named)} {kind} extensions disagree ({listed}); escalate"
        )
    decision = decisions.pop()
    return verdict(decision, tie, f"all {len(named)} {kind} extensions decide {decision}")


def _decide_one(accepted: list[VerdictArgument]) -> tuple[str, bool, str]:
    """(decision, tie, reason) of one extension's arguments."""
    if not accepted:
        return "undecided", False, "no argument survives its attackers; escalate"
    groups = {d: [a.id for a in accepted if a.decision == d] for d in RESTRICTIVENESS}
    present = [d for d in RESTRICTIVENESS if groups[d]]
    if len(present) == 1:
        return present[0], False, f"every accepted argument says {present[0]}"
    listed = "; ".join(f"{d}: {', '.join(groups[d])}" for d in present)
    return present[0], True, f"accepted arguments disagree ({listed}); {TIE_RULE}"


def _set(names: list[str]) -> str:
    return "{" + ", ".join(names) + "}"
