"""`claimwatch explain`: every disposition and outcome rendered from the record alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.audit.explain import explain
from claimwatch.core.claim import claim_from_envelope
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.resolve import resolve
from claimwatch.core.timeutil import parse_rfc3339

from tests.support.claims import envelope

CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
NOW = "2026-09-14T09:12:30Z"
ESCALATE = "Action: escalate: a person must decide before anything irreversible happens."


def _at(clock: str) -> str:
    """A time on 2026-09-14 at 09:`clock` (minutes:seconds), UTC."""
    return f"2026-09-14T09:{clock}Z"


def _claim(
    claim_id: str, source: str, value: Any = None, *, at: str | None = "12:20", **extra: Any
) -> dict[str, Any]:
    """`envelope` observed at 09:`at` (None: no `observed_at`), 10 s before NOW unless told."""
    return envelope(claim_id, source, value, observed_at=None if at is None else _at(at), **extra)


def _decide(policy: CompiledPolicy, *claims: dict[str, Any]) -> dict[str, Any]:
    """The decision record of one fact's claims at NOW under the example policy."""
    return resolve([claim_from_envelope(c) for c in claims], policy, parse_rfc3339(NOW))


def _lines(record: dict[str, Any]) -> list[str]:
    return explain(record).splitlines()


def _claim_lines(record: dict[str, Any]) -> dict[str, str]:
    """The rendered line of each claim of the record, by claim id (in record order)."""
    lines = _lines(record)
    start = lines.index("Claims considered:") + 1
    rendered = lines[start : start + len(record["claims"])]
    return {c["claim_id"]: line for c, line in zip(record["claims"], rendered, strict=True)}


def _dispositions(record: dict[str, Any]) -> dict[str, str]:
    return {c["claim_id"]: c["disposition"] for c in record["claims"]}


def _assert_matches_record(record: dict[str, Any]) -> None:
    """What every explanation must say: id, fact, time, policy, outcome, every claim, action."""
    lines = _lines(record)
    assert (
        f"Decision {record['decision_id']} on {record['subject']} {record['field']} "
        f"at {record['decided_at']}"
    ) == lines[0]
    assert f"under policy {record['policy_version']}: {record['outcome'].upper()}." == lines[1]
    assert f"Why: {record['reason']}." in lines
    assert lines[-1].startswith(f"Action: {record['action']}: ")
    for claim in record["claims"]:
        line = _claim_lines(record)[claim["claim_id"]]
        said = (
            "not found"
            if claim["status"] == "not_found"
            else json.dumps(claim["value"], separators=(",", ":"))
            if "value" in claim
            else "no value"
        )
        when = claim.get("observed_at", "an unknown time")
        head = f"  - {claim['source']} ({claim['authority']}) said {said} at {when}: "
        assert head == line[: len(head)]


def test_resolved_names_every_disposition(policy: CompiledPolicy) -> None:
    """Resolved: won, corroborating, same_lineage, outranked, stale, no_evidence, rejected."""
    record = _decide(
        policy,
        _claim("c-won", "billing-api", "paid", at="12:20"),
        _claim("c-copy", "ledger-replica", "paid", at="12:25"),
        _claim("c-eu", "billing-api@eu-west-1", "paid", at="12:10", lineage="ledger-eu"),
        _claim("c-lag", "reporting-replica", "overdue", at="12:05"),
        _claim("c-new", "scorer", "unpaid", at="12:28"),
        _claim("c-old", "user", "paid", at="10:00"),
        _claim("c-down", "billing-api", at="12:21", status="unavailable"),
        _claim("c-bad", "reporting-replica", "bogus", at="12:22"),
        _claim("c-notime", "crm", "paid", at=None),
    )
    assert {
        "c-won": "won",
        "c-copy": "same_lineage",
        "c-eu": "corroborating",
        "c-lag": "outranked",
        "c-new": "outranked",
        "c-old": "stale",
        "c-down": "no_evidence",
        "c-bad": "rejected",
        "c-notime": "rejected",
    } == _dispositions(record)
    _assert_matches_record(record)
    lines = _lines(record)
    assert "under policy arbitration-2026-09: RESOLVED." == lines[1]
    assert (
        'The value is "paid", from billing-api (system_of_record), '
        "with 2 independent lineage(s) agreeing."
    ) == lines[2]
    assert {
        "c-won": '  - billing-api (system_of_record) said "paid" at 2026-09-14T09:12:20Z: won.',
        "c-copy": '  - ledger-replica (cached) said "paid" at 2026-09-14T09:12:25Z: shares its '
        "upstream (ledger) with a stronger claim: one vote, not two.",
        "c-eu": '  - billing-api@eu-west-1 (system_of_record) said "paid" at '
        "2026-09-14T09:12:10Z: agreed with the winner (an independent lineage).",
        "c-lag": '  - reporting-replica (derived) said "overdue" at 2026-09-14T09:12:05Z: was '
        "outranked and dissents from the decided value; it is older than billing-api "
        "(a lagging copy?).",
        "c-new": '  - scorer (derived) said "unpaid" at 2026-09-14T09:12:28Z: was outranked and '
        "dissents from the decided value.",
        "c-old": '  - user (asserted) said "paid" at 2026-09-14T09:10:00Z: was too old: observed '
        "beyond the field's freshness budget.",
        "c-down": "  - billing-api (system_of_record) said no value at 2026-09-14T09:12:21Z: "
        "is no evidence: the tool reported `unavailable`.",
        "c-bad": '  - reporting-replica (derived) said "bogus" at 2026-09-14T09:12:22Z: was '
        "rejected: `value`: 'bogus' is not one of the allowed values: paid, unpaid, "
        "overdue, refunded.",
        "c-notime": '  - crm (derived) said "paid" at an unknown time: was rejected: '
        "missing `observed_at`.",
    } == _claim_lines(record)
    assert "Action: proceed: the agent may act on this value." == lines[-1]


def test_temporal_flag_follows_the_record(policy: CompiledPolicy) -> None:
    """Only dissent older than the winner is called a lagging copy (the record's temporal flag)."""
    record = _decide(
        policy,
        _claim("c-won", "billing-api", "paid", at="12:20"),
        _claim("c-lag", "reporting-replica", "overdue", at="12:05"),
        _claim("c-new", "scorer", "unpaid", at="12:28"),
    )
    flags = {
        c["claim_id"]: (c["dissent"], c["temporal"])
        for c in record["claims"]
        if c["disposition"] == "outranked"
    }
    assert {"c-lag": (True, True), "c-new": (True, False)} == flags
    rendered = _claim_lines(record)
    assert True is rendered["c-lag"].endswith("it is older than billing-api (a lagging copy?).")
    assert False is ("older" in rendered["c-new"])


def test_resolved_absence(policy: CompiledPolicy) -> None:
    """A resolved absence says the value is absent and every claim said `not found`."""
    record = _decide(
        policy,
        _claim("a-1", "billing-api", at="12:20", status="not_found"),
        _claim("a-2", "ledger-replica", at="12:24", status="not_found"),
    )
    assert ("resolved", False, None) == (record["outcome"], record["exists"], record["value"])
    _assert_matches_record(record)
    assert (
        "The value is absent (not found), from billing-api (system_of_record), "
        "with 1 independent lineage(s) agreeing."
    ) == _lines(record)[2]
    assert {
        "a-1": "  - billing-api (system_of_record) said not found at 2026-09-14T09:12:20Z: won.",
        "a-2": "  - ledger-replica (cached) said not found at 2026-09-14T09:12:24Z: shares its "
        "upstream (ledger) with a stronger claim: one vote, not two.",
    } == _claim_lines(record)


def test_value_conflict_lists_the_competitors(policy: CompiledPolicy) -> None:
    """A value conflict: contradicting owners, lineage dissent, an outranked weaker class."""
    record = _decide(
        policy,
        _claim("v-us", "billing-api@us-east-1", "unpaid", at="12:20", lineage="ledger-us"),
        _claim("v-eu", "billing-api@eu-west-1", "paid", at="12:21", lineage="ledger-eu"),
        _claim("v-cache", "ledger-replica", "overdue", at="12:22", lineage="ledger-eu"),
        _claim("v-report", "reporting-replica", "overdue", at="12:23"),
    )
    assert ("conflict", "value") == (record["outcome"], record["conflict_kind"])
    _assert_matches_record(record)
    lines = _lines(record)
    assert [
        "The strongest sources disagree (value conflict); no value is decided:",
        '  - billing-api@eu-west-1 said "paid" at 2026-09-14T09:12:21Z',
        '  - billing-api@us-east-1 said "unpaid" at 2026-09-14T09:12:20Z',
        "Why: 2 distinct values at system_of_record; no fall-through to weaker classes.",
    ] == lines[2:6]
    assert {
        "v-us": '  - billing-api@us-east-1 (system_of_record) said "unpaid" at '
        "2026-09-14T09:12:20Z: contradicted the other strongest claims.",
        "v-eu": '  - billing-api@eu-west-1 (system_of_record) said "paid" at '
        "2026-09-14T09:12:21Z: contradicted the other strongest claims.",
        "v-cache": '  - ledger-replica (cached) said "overdue" at 2026-09-14T09:12:22Z: was '
        "outranked within its lineage (ledger-eu): it disagrees with a stronger claim from "
        "the same upstream.",
        "v-report": '  - reporting-replica (derived) said "overdue" at 2026-09-14T09:12:23Z: was '
        "outranked by a stronger class (no fall-through to weaker sources).",
    } == _claim_lines(record)
    assert ESCALATE == lines[-1]


def test_existence_conflict(policy: CompiledPolicy) -> None:
    """An existence conflict shows the found value against `not found`."""
    record = _decide(
        policy,
        _claim("e-1", "billing-api", "paid", at="12:20"),
        _claim("e-2", "billing-api@eu-west-1", at="12:25", status="not_found", lineage="ledger-eu"),
    )
    assert ("conflict", "existence") == (record["outcome"], record["conflict_kind"])
    _assert_matches_record(record)
    assert [
        "The strongest sources disagree (existence conflict); no value is decided:",
        "  - billing-api@eu-west-1 said not found at 2026-09-14T09:12:25Z",
        '  - billing-api said "paid" at 2026-09-14T09:12:20Z',
        "Why: existence conflict at system_of_record: found vs not_found.",
    ] == _lines(record)[2:6]


def test_insufficient_when_stale(policy: CompiledPolicy) -> None:
    """All claims stale: insufficient, with the budget named, and no value shown."""
    record = _decide(
        policy,
        _claim("s-1", "billing-api", "paid", at="10:00"),
        _claim("s-2", "reporting-replica", "paid", at="11:00"),
    )
    assert "insufficient" == record["outcome"]
    _assert_matches_record(record)
    lines = _lines(record)
    assert "Why: all 2 claim(s) exceeded the freshness budget (1m)." == lines[2]
    assert False is any(line.startswith("The value is") for line in lines)
    assert {
        "s-1": '  - billing-api (system_of_record) said "paid" at 2026-09-14T09:10:00Z: was too '
        "old: observed beyond the field's freshness budget.",
        "s-2": '  - reporting-replica (derived) said "paid" at 2026-09-14T09:11:00Z: was too '
        "old: observed beyond the field's freshness budget.",
    } == _claim_lines(record)
    assert ESCALATE == lines[-1]


def test_insufficient_without_evidence_degrades(policy: CompiledPolicy) -> None:
    """Only error channels: insufficient, no evidence, and a non-consequential field degrades."""
    record = _decide(
        policy,
        _claim("n-1", "scorer", at="12:20", field="risk_score", status="forbidden"),
        _claim("n-2", "billing-api", at="12:21", field="risk_score", status="error"),
    )
    assert ("insufficient", "degrade") == (record["outcome"], record["action"])
    _assert_matches_record(record)
    lines = _lines(record)
    assert "Why: no evidence: 2 claim(s) were forbidden, unavailable or errors." == lines[2]
    assert {
        "n-1": "  - scorer (system_of_record) said no value at 2026-09-14T09:12:20Z: is no "
        "evidence: the tool reported `forbidden`.",
        "n-2": "  - billing-api (derived) said no value at 2026-09-14T09:12:21Z: is no "
        "evidence: the tool reported `error`.",
    } == _claim_lines(record)
    assert "Action: degrade: answer without relying on this fact." == lines[-1]


def test_rejected_names_each_reason(policy: CompiledPolicy) -> None:
    """All claims broken: rejected, every claim with its own reason from the record."""
    record = _decide(
        policy,
        _claim(
            "r-1",
            "billing-api",
            {"amount": 1999, "currency": "USD", "minor_units": True},
            at="12:20",
            subject="unit:SKU-9",
            field="unit_price",
        ),
        _claim("r-2", "billing-api", at="12:21", subject="unit:SKU-9", field="unit_price"),
        _claim(
            "r-3",
            "billing-api",
            {"amount": 1999, "currency": "EUR", "minor_units": True},
            at="42:30",
            subject="unit:SKU-9",
            field="unit_price",
        ),
    )
    assert "rejected" == record["outcome"]
    _assert_matches_record(record)
    errors = {c["claim_id"]: c["error"] for c in record["claims"]}
    assert True is ("USD" in errors["r-1"])
    assert "status ok without a `value`" == errors["r-2"]
    assert "observed 30m in the future (allowed skew 5s)" == errors["r-3"]
    rendered = _claim_lines(record)
    for claim_id, error in errors.items():
        assert True is rendered[claim_id].endswith(f": was rejected: {error}.")
    lines = _lines(record)
    assert f"Why: all 3 claim(s) rejected; first: {errors['r-1']}." == lines[2]
    assert ESCALATE == lines[-1]


def test_asserted_winner_is_not_proof(policy: CompiledPolicy) -> None:
    """A user's word resolves the value but the action escalates, and the reason says why."""
    record = _decide(policy, _claim("u-1", "user", "paid", at="12:20"))
    assert ("resolved", "escalate") == (record["outcome"], record["action"])
    _assert_matches_record(record)
    assert True is _lines(record)[3].endswith("; an assertion is not proof of state.")


@pytest.fixture
def decisions_file(policy: CompiledPolicy, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A JSON-lines file of a few decision records."""
    records = [
        _decide(policy, _claim("f-1", "billing-api", "paid")),
        _decide(
            policy,
            _claim("f-2", "billing-api", "paid", subject="invoice:INV-2"),
            _claim("f-3", "billing-api@eu-west-1", "unpaid", subject="invoice:INV-2", lineage="eu"),
        ),
        _decide(policy, _claim("f-4", "billing-api", "paid", at="01:00", subject="invoice:INV-3")),
    ]
    path = tmp_path / "decisions.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path, records


def _cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIMWATCH_")}
    return subprocess.run(
        [str(CLAIMWATCH), "explain", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_cli_explains_from_a_file(decisions_file: tuple[Path, list[dict[str, Any]]]) -> None:
    """`claimwatch explain ID --from FILE` prints the rendering of that record and exits 0."""
    path, records = decisions_file
    for record in records:
        proc = _cli(record["decision_id"], "--from", str(path))
        assert (0, b"") == (proc.returncode, proc.stderr)
        assert (explain(record) + "\n").encode() == proc.stdout


def test_cli_explains_from_stdin(decisions_file: tuple[Path, list[dict[str, Any]]]) -> None:
    """Without --from, piped decisions are read from stdin."""
    path, records = decisions_file
    proc = _cli(records[1]["decision_id"], stdin=path.read_bytes())
    assert (0, (explain(records[1]) + "\n").encode()) == (proc.returncode, proc.stdout)


def test_cli_unknown_id_exits_1(decisions_file: tuple[Path, list[dict[str, Any]]]) -> None:
    """An id that is not in the file is reported on stderr with exit 1 and nothing on stdout."""
    path, _ = decisions_file
    proc = _cli("dec_00000000000000000000000000000000", "--from", str(path))
    assert (1, b"") == (proc.returncode, proc.stdout)
    assert (
        f"claimwatch: no decision dec_00000000000000000000000000000000 in {path}\n".encode()
        == proc.stderr
    )


def test_user_assertion_the_owner_disagrees_with_is_marked_not_verified(
    policy: CompiledPolicy,
) -> None:
    """The user's "paid" stays in the record as evidence and is rendered asserted, not verified."""
    record = _decide(
        policy,
        _claim("own-1", "billing-api", "unpaid", at="12:20"),
        _claim("usr-1", "user", "paid", at="12:25"),
    )
    assert ("resolved", "unpaid") == (record["outcome"], record["value"])
    kept = {
        c["claim_id"]: (c["authority"], c["disposition"], c.get("dissent"))
        for c in record["claims"]
    }
    assert ("asserted", "outranked", True) == kept["usr-1"]
    _assert_matches_record(record)
    lines = _lines(record)
    assert (
        'Asserted, not verified: user said "paid", but billing-api (system_of_record) '
        'still shows "unpaid".'
    ) == lines[3]
    assert _claim_lines(record)["usr-1"].endswith(
        "was outranked and dissents from the decided value (asserted, not verified: "
        'billing-api (system_of_record) still shows "unpaid").'
    )
    assert record["reason"].endswith("; 1 user assertion(s) disagree: asserted, not verified")


def test_user_assertion_that_agrees_or_went_stale_is_not_marked(policy: CompiledPolicy) -> None:
    """An assertion confirmed by the owner, or one too old to count, carries no mark."""
    record = _decide(
        policy,
        _claim("own-2", "billing-api", "paid", at="12:20"),
        _claim("usr-2", "user", "paid", at="12:25"),
        _claim("usr-3", "user@mobile", "unpaid", at="05:00"),
    )
    text = explain(record)
    assert ("resolved", "proceed") == (record["outcome"], record["action"])
    assert "not verified" not in text
    assert "not verified" not in record["reason"]


def test_user_assertion_alone_or_beside_a_conflict_is_not_verified(
    policy: CompiledPolicy,
) -> None:
    """A lone assertion decides nothing proven; beside a conflict of owners it is unverified."""
    alone = _decide(policy, _claim("usr-4", "user", "paid"))
    assert _claim_lines(alone)["usr-4"].endswith(
        "won (asserted, not verified: no stronger source confirms it)."
    )
    split = _decide(
        policy,
        _claim("own-3", "billing-api@us", "paid", lineage="us"),
        _claim("own-4", "billing-api@eu", "unpaid", lineage="eu"),
        _claim("usr-5", "user", "paid"),
    )
    assert "conflict" == split["outcome"]
    assert _claim_lines(split)["usr-5"].endswith(
        "(asserted, not verified: the stronger sources disagree among themselves)."
    )
