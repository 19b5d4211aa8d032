"""Resolving a `text` field: conflict on any conflicting pair; near-duplicates are one lineage."""

from __future__ import annotations

import itertools
from typing import Any

from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.normalize import normalizer_for
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.resolve import resolve
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.policy import Policy

from tests.support.claims import envelope

NOW = parse_rfc3339("2026-09-14T10:00:00Z")
POLICY = CompiledPolicy(
    Policy.model_validate(
        {
            "policy_version": "text-1",
            "sources": {
                "label-db": {"authority": "system_of_record", "lineage": "label"},
                "label-cache": {"authority": "cached", "lineage": "label"},
                **{name: {"authority": "derived"} for name in ("wiki", "blog", "news")},
            },
            "fields": {
                "summary": {"type": "text", "freshness": "1h"},
                "notes": {"type": "text", "freshness": "1h", "on_conflict": "prefer_recent"},
            },
        }
    )
)

DOSE = "The maximum daily dose is 4000 mg."
DOSE_CLONE = "The maximum daily dose is 4000 mg!"
LOWER_DOSE = "The maximum daily dose is 3000 mg."
KIDNEYS = "The drug is excreted by the kidneys."
LIVER = "The drug is metabolised in the liver."
REPORT = "The quarterly report covers revenue, costs and staffing."
REPORT_DETAIL = "The quarterly report covers revenue, costs and staffing in detail."
REPORT_INVESTORS = (
    "The quarterly report covers revenue, costs and staffing in detail for investors."
)


def claim(cid: str, source: str, text: str | None, minute: int, field: str = "summary") -> Claim:
    """A claim about drug:x observed `minute` minutes past 09:00 (None: not_found)."""
    status = "ok" if text is not None else "not_found"
    at = f"2026-09-14T09:{minute:02d}:00Z"
    return claim_from_envelope(
        envelope(cid, source, text, subject="drug:x", field=field, observed_at=at, status=status)
    )


def decide(*claims: Claim) -> dict[str, Any]:
    return resolve(list(claims), POLICY, NOW)


def fates(record: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """claim_id -> (lineage, disposition)."""
    return {c["claim_id"]: (c["lineage"], c["disposition"]) for c in record["claims"]}


def test_complementary_passages_resolve_to_the_newest_with_every_passage_listed() -> None:
    """Passages that do not conflict resolve: the newest wins, all of them in alternatives."""
    record = decide(claim("a", "wiki", DOSE, 10), claim("b", "blog", KIDNEYS, 20),
                    claim("c", "news", LIVER, 30))  # fmt: skip
    assert ("resolved", LIVER) == (record["outcome"], record["value"])
    assert ["c", "b", "a"] == [a["claim_id"] for a in record["alternatives"]]
    reason = "value from news (derived); 3 lineage(s) agree; newest of 3 complementary passages"
    assert f"{reason}, all listed" == record["reason"]
    assert {"a": ("wiki", "corroborating"), "b": ("blog", "corroborating"),
            "c": ("news", "won")} == fates(record)  # fmt: skip


def test_one_conflicting_pair_makes_the_fact_a_conflict() -> None:
    """Among the strongest passages, a single conflicting pair is enough for a conflict."""
    record = decide(claim("a", "wiki", DOSE, 10), claim("b", "blog", KIDNEYS, 20),
                    claim("c", "news", LOWER_DOSE, 30))  # fmt: skip
    assert ("conflict", "value", None) == (
        record["outcome"], record["conflict_kind"], record["value"]
    )  # fmt: skip
    assert ["c", "b", "a"] == [a["claim_id"] for a in record["alternatives"]]
    assert {"contradicting"} == {c["disposition"] for c in record["claims"]}


def test_near_duplicates_are_one_lineage_not_corroboration() -> None:
    """A clone from another source joins the passage's lineage: same_lineage, one vote."""
    record = decide(claim("a", "wiki", DOSE, 10), claim("b", "mirror", DOSE_CLONE, 20))
    assert ("resolved", 1, []) == (
        record["outcome"], record["corroboration"], record["alternatives"]
    )  # fmt: skip
    assert {"a": ("mirror", "same_lineage"), "b": ("mirror", "won")} == fates(record)


def test_near_duplicates_group_as_connected_components() -> None:
    """A chain of near-duplicates is one lineage although its two ends are not alike."""
    text = normalizer_for(POLICY.rule("summary").spec)
    assert (True, True, False) == (
        text.duplicate(REPORT, REPORT_DETAIL),  # type: ignore[attr-defined]
        text.duplicate(REPORT_DETAIL, REPORT_INVESTORS),  # type: ignore[attr-defined]
        text.duplicate(REPORT, REPORT_INVESTORS),  # type: ignore[attr-defined]
    )
    record = decide(claim("a", "wiki", REPORT, 10), claim("b", "blog", REPORT_INVESTORS, 20),
                    claim("c", "news", REPORT_DETAIL, 30))  # fmt: skip
    assert {"a": ("news", "same_lineage"), "b": ("news", "same_lineage"),
            "c": ("news", "won")} == fates(record)  # fmt: skip
    assert (1, []) == (record["corroboration"], record["alternatives"])


def test_a_duplicate_of_any_claim_of_a_lineage_joins_the_whole_lineage() -> None:
    """Sharing a lineage connects claims too; the strongest claim's lineage names the group."""
    record = decide(claim("a", "label-db", KIDNEYS, 10), claim("b", "label-cache", DOSE, 20),
                    claim("c", "wiki", DOSE_CLONE, 30))  # fmt: skip
    assert {"a": ("label", "won"), "b": ("label", "same_lineage"),
            "c": ("label", "same_lineage")} == fates(record)  # fmt: skip


def test_conflict_is_checked_before_duplicate_collapse() -> None:
    """A passage that differs only by a negation is a conflict, never a clone of the other."""
    record = decide(claim("a", "wiki", "The vaccine is recommended for pregnant patients.", 10),
                    claim("b", "blog", "The vaccine is not recommended for pregnant patients.",
                          20))  # fmt: skip
    assert "conflict" == record["outcome"]
    assert {"a": ("wiki", "contradicting"), "b": ("blog", "contradicting")} == fates(record)


def test_weaker_conflicting_passage_is_outranked_dissent() -> None:
    """The strongest class decides; a weaker passage that conflicts with it is dissent."""
    record = decide(claim("a", "label-db", DOSE, 10), claim("b", "wiki", LOWER_DOSE, 30))
    assert ("resolved", DOSE) == (record["outcome"], record["value"])
    dissent = {c["claim_id"]: (c["disposition"], c.get("dissent")) for c in record["claims"]}
    assert {"a": ("won", None), "b": ("outranked", True)} == dissent


def test_passage_against_not_found_is_an_existence_conflict() -> None:
    """A found passage meeting not_found is an existence conflict, as for every type."""
    record = decide(claim("a", "wiki", DOSE, 10), claim("b", "blog", None, 20))
    assert ("conflict", "existence") == (record["outcome"], record["conflict_kind"])


def test_prefer_recent_settles_a_text_conflict() -> None:
    """on_conflict applies to text as to other types: prefer_recent picks the newest."""
    record = decide(
        claim("a", "wiki", DOSE, 10, "notes"), claim("b", "blog", LOWER_DOSE, 20, "notes")
    )
    assert ("resolved", LOWER_DOSE) == (record["outcome"], record["value"])
    assert [] == record["alternatives"]


def test_single_passage_lists_no_alternatives() -> None:
    """One passage resolves as before, with no alternatives."""
    record = decide(claim("a", "wiki", DOSE, 10))
    assert ("resolved", DOSE, []) == (record["outcome"], record["value"], record["alternatives"])


def test_text_decisions_do_not_depend_on_claim_order() -> None:
    """Every arrival order of the same claims gives the same decision record."""
    claims = [claim("a", "wiki", REPORT, 10), claim("b", "blog", REPORT_INVESTORS, 20),
              claim("c", "news", REPORT_DETAIL, 30), claim("d", "forum", KIDNEYS, 40)]  # fmt: skip
    records = [resolve(list(order), POLICY, NOW) for order in itertools.permutations(claims)]
    assert [records[0]] * len(records) == records
