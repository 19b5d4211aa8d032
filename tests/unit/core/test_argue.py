"""Argumentation engine: worked example, classic shapes, decision mapping, determinism."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from claimwatch.core.argue import (
    AttackRule,
    Framework,
    FrameworkError,
    VerdictArgument,
    acceptance,
    decide,
    grounded_extension,
    named_extensions,
)

from tests.support.paths import REPO

ROOT = REPO
SEMANTICS = ("grounded", "complete", "preferred", "stable")

BASELINE = VerdictArgument("baseline_allow", "opa", "baseline", "allowed by default", 0.3, "allow")
PII = VerdictArgument(
    "pii_moderate", "pii-scanner", "pii_detected", "2 e-mails: mask", 0.6, "modify"
)
TRUST = VerdictArgument(
    "knowledge_trust_0", "knowledge-hub", "trusted_domain", "trusted", 0.8, "allow"
)
RULES = [
    AttackRule("pii_detected", "baseline", "undercut"),
    AttackRule("trusted_domain", "pii_detected", "undermine"),
]


def _all(arguments: list[str], attacks: list[tuple[str, str]]) -> dict[str, list[list[str]]]:
    framework = Framework.build(arguments, attacks)
    return {semantics: named_extensions(framework, semantics) for semantics in SEMANTICS}


# ---------------------------------------------------------------- worked example and shapes


def test_worked_example_trusted_domain_defends_the_baseline_allow() -> None:
    """The trust record attacks the PII argument, which reinstates the baseline allow."""
    verdict = decide([BASELINE, PII, TRUST], RULES)
    assert ("allow", "proceed") == (verdict.decision, verdict.action)
    assert [["baseline_allow", "knowledge_trust_0"]] == verdict.extensions
    assert ["baseline_allow", "knowledge_trust_0"] == verdict.accepted
    expected_attacks = [
        ("knowledge_trust_0", "pii_moderate", "undermine"),
        ("pii_moderate", "baseline_allow", "undercut"),
    ]
    assert expected_attacks == [(a.attacker, a.attacked, a.type) for a in verdict.attacks]
    expected_labels = {"baseline_allow": "in", "knowledge_trust_0": "in", "pii_moderate": "out"}
    assert expected_labels == verdict.labels


def test_worked_example_without_trust_record_the_pii_argument_wins() -> None:
    """Without the trust record the PII argument defeats the baseline: modify (mask)."""
    verdict = decide([BASELINE, PII], RULES)
    assert ("modify", "modify") == (verdict.decision, verdict.action)
    assert [["pii_moderate"]] == verdict.extensions
    assert False is verdict.tie


def test_mutual_attack() -> None:
    """Two arguments attacking each other: nothing grounded, either one preferred and stable."""
    expected = {
        "grounded": [[]],
        "complete": [[], ["a"], ["b"]],
        "preferred": [["a"], ["b"]],
        "stable": [["a"], ["b"]],
    }
    assert expected == _all(["a", "b"], [("a", "b"), ("b", "a")])


def test_self_attack() -> None:
    """A self-attacking argument is never accepted, and leaves no stable extension."""
    expected = {"grounded": [[]], "complete": [[]], "preferred": [[]], "stable": []}
    assert expected == _all(["a"], [("a", "a")])


def test_self_attacker_cannot_defeat_others() -> None:
    """What only a self-attacker attacks stays undecided; an unattacked argument is accepted."""
    expected = {"grounded": [["c"]], "complete": [["c"]], "preferred": [["c"]], "stable": []}
    assert expected == _all(["a", "b", "c"], [("a", "a"), ("a", "b")])


def test_odd_cycle() -> None:
    """A three-cycle has only the empty complete extension and no stable one."""
    expected = {"grounded": [[]], "complete": [[]], "preferred": [[]], "stable": []}
    assert expected == _all(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")])


def test_even_cycle() -> None:
    """A four-cycle has two preferred (and stable) extensions of alternate arguments."""
    expected = {
        "grounded": [[]],
        "complete": [[], ["a", "c"], ["b", "d"]],
        "preferred": [["a", "c"], ["b", "d"]],
        "stable": [["a", "c"], ["b", "d"]],
    }
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    assert expected == _all(["a", "b", "c", "d"], cycle)


def test_reinstatement() -> None:
    """With a attacking b and b attacking c, a reinstates c under every semantics."""
    expected = {semantics: [["a", "c"]] for semantics in SEMANTICS}
    assert expected == _all(["a", "b", "c"], [("a", "b"), ("b", "c")])


def test_floating_acceptance() -> None:
    """Argument d is defended by a in one preferred extension, by b in the other; not grounded."""
    arguments = ["a", "b", "c", "d"]
    attacks = [("a", "b"), ("b", "a"), ("a", "c"), ("b", "c"), ("c", "d")]
    expected = {
        "grounded": [[]],
        "complete": [[], ["a", "d"], ["b", "d"]],
        "preferred": [["a", "d"], ["b", "d"]],
        "stable": [["a", "d"], ["b", "d"]],
    }
    assert expected == _all(arguments, attacks)
    framework = Framework.build(arguments, attacks)
    assert (["a", "b", "d"], ["d"]) == tuple(vars_of(acceptance(framework, "preferred")))
    assert (["a", "b", "d"], []) == tuple(vars_of(acceptance(framework, "complete")))
    assert ([], []) == tuple(vars_of(acceptance(framework, "grounded")))


def vars_of(result: Any) -> list[list[str]]:
    """Credulous and skeptical lists of an Acceptance."""
    return [result.credulous, result.skeptical]


def test_no_stable_extension_makes_everything_skeptically_accepted() -> None:
    """With no stable extension nothing is credulously and everything skeptically accepted."""
    framework = Framework.build(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")])
    assert [[], ["a", "b", "c"]] == vars_of(acceptance(framework, "stable"))


def test_unknown_argument_in_attack_is_an_error() -> None:
    """An attack naming an argument that does not exist raises, naming that argument."""
    with pytest.raises(FrameworkError) as caught:
        Framework.build(["a", "b"], [("a", "b"), ("b", "ghost")])
    assert "attack ('b', 'ghost') names unknown argument 'ghost'" == str(caught.value)


def test_names_sort_numbers_by_value_then_text() -> None:
    """Digit names sort by value, other names after them by code point."""
    framework = Framework.build(["b", "10", "2", "a", "1"], [])
    assert ["1", "2", "10", "a", "b"] == list(framework.names)


def test_grounded_of_a_long_chain_has_no_recursion_limit() -> None:
    """A chain of 200 001 arguments: every other argument is grounded, no recursion error."""
    n = 200_001
    framework = Framework.from_indices(
        [str(i) for i in range(n)], [(i, i + 1) for i in range(n - 1)]
    )
    assert list(range(0, n, 2)) == grounded_extension(framework)


# ---------------------------------------------------------------- decision mapping


def _arg(name: str, kind: str, decision: str, strength: float = 0.5) -> VerdictArgument:
    return VerdictArgument(name, name, kind, f"{name} says {decision}", strength, decision)


def test_empty_grounded_extension_is_undecided_and_escalates() -> None:
    """An allow and a deny attacking each other: nothing grounded, so undecided, never allow."""
    rules = [AttackRule("x", "y", "rebut"), AttackRule("y", "x", "rebut")]
    verdict = decide([_arg("ok", "x", "allow"), _arg("no", "y", "deny")], rules)
    assert ("undecided", "escalate") == (verdict.decision, verdict.action)
    assert [[]] == verdict.extensions
    expected = "grounded extension {}: no argument survives its attackers; escalate"
    assert expected == verdict.reason


def test_tie_rule_most_restrictive_wins() -> None:
    """Accepted arguments that disagree: deny beats modify beats allow; the record says tie."""
    allow, modify, deny = (
        _arg("a", "k1", "allow"),
        _arg("m", "k2", "modify"),
        _arg("d", "k3", "deny"),
    )
    verdict = decide([allow, modify, deny], [])
    assert ("deny", "block", True) == (verdict.decision, verdict.action, verdict.tie)
    expected = (
        "grounded extension {a, d, m}: accepted arguments disagree (deny: d; modify: m; "
        "allow: a); the most restrictive decision wins (deny > modify > allow)"
    )
    assert expected == verdict.reason
    assert ("modify", True) == (
        decide([allow, modify], []).decision,
        decide([allow, modify], []).tie,
    )


def test_tie_rule_does_not_depend_on_input_order_or_strength() -> None:
    """The same arguments in any order and with swapped strengths give the same decision."""
    first = [_arg("a", "k1", "allow", 0.9), _arg("d", "k2", "deny", 0.1)]
    second = [_arg("d", "k2", "deny", 0.9), _arg("a", "k1", "allow", 0.1)]
    assert "deny" == decide(first, []).decision
    assert "deny" == decide(second, []).decision
    assert decide(first, []).extensions == decide(list(reversed(first)), []).extensions


def test_preferred_extensions_that_disagree_are_undecided() -> None:
    """Two preferred extensions, one allowing and one denying: undecided."""
    rules = [AttackRule("x", "y", "rebut"), AttackRule("y", "x", "rebut")]
    verdict = decide([_arg("ok", "x", "allow"), _arg("no", "y", "deny")], rules, "preferred")
    assert ("undecided", [["no"], ["ok"]]) == (verdict.decision, verdict.extensions)
    assert [] == verdict.accepted


def test_preferred_extensions_that_agree_decide() -> None:
    """Two preferred extensions that both deny: deny, though no argument is in both."""
    rules = [AttackRule("x", "y", "rebut"), AttackRule("y", "x", "rebut")]
    verdict = decide([_arg("n1", "x", "deny"), _arg("n2", "y", "deny")], rules, "preferred")
    assert ("deny", []) == (verdict.decision, verdict.accepted)


def test_no_stable_extension_is_undecided() -> None:
    """An odd cycle of checks has no stable extension: undecided."""
    rules = [
        AttackRule("x", "y", "rebut"),
        AttackRule("y", "z", "rebut"),
        AttackRule("z", "x", "rebut"),
    ]
    arguments = [_arg("p", "x", "allow"), _arg("q", "y", "allow"), _arg("r", "z", "allow")]
    verdict = decide(arguments, rules, "stable")
    assert ("undecided", []) == (verdict.decision, verdict.extensions)


def test_kind_rules_never_make_self_attacks() -> None:
    """A rule from a kind to itself makes its arguments attack each other, not themselves."""
    rules = [AttackRule("x", "x", "rebut")]
    verdict = decide([_arg("p", "x", "allow"), _arg("q", "x", "deny")], rules)
    assert [("p", "q"), ("q", "p")] == [(a.attacker, a.attacked) for a in verdict.attacks]


# ---------------------------------------------------------------- determinism


_DETERMINISM = """
import json, random
from claimwatch.core.argue import AttackRule, Framework, VerdictArgument, decide, named_extensions
rng = random.Random(7)
out = []
for _ in range(40):
    n = rng.randint(1, 9)
    names = [rng.choice("abcdefghijkl") + str(i) for i in range(n)]
    attacks = [(a, b) for a in names for b in names if rng.random() < 0.3]
    framework = Framework.build(set(names), set(attacks))
    semantics = ("grounded", "complete", "preferred", "stable")
    out.append({s: named_extensions(framework, s) for s in semantics})
decisions = ["allow", "deny", "modify"]
args = [VerdictArgument(f"x{i}", f"c{i}", f"k{i % 3}", "", 0.5, decisions[i % 3]) for i in range(7)]
rules = [AttackRule("k0", "k1", "rebut"), AttackRule("k1", "k0", "rebut")]
rules.append(AttackRule("k2", "k0", "undercut"))
verdict = decide(list(set(args)), rules, "preferred")
attacks = [[a.attacker, a.attacked, a.type] for a in verdict.attacks]
out.append([verdict.decision, verdict.extensions, verdict.reason, verdict.labels, attacks])
print(json.dumps(out))
"""


def test_same_output_under_different_hash_seeds() -> None:
    """Extensions and decisions are byte-identical across PYTHONHASHSEED values (set inputs)."""
    outputs = set()
    for seed in ("0", "1", "42", "12345", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _DETERMINISM],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=ROOT,
            check=True,
        )
        outputs.add(done.stdout)
    assert 1 == len(outputs)
