"""`claimwatch replay` from a JSON-lines file: determinism, the file's own clock, diff, usage."""

from __future__ import annotations

import itertools
import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.wire.topics import partition_for

from tests.support.claims import envelope
from tests.support.clocks import T0
from tests.support.paths import REPO

ROOT = REPO
POLICY = ROOT / "examples" / "policy.yaml"
CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
PARTITIONS = 4
PAYMENT_60S = "freshness: 60s, consequential: true, owner: billing-api"
SKEW_S = 5.0


def _at(seconds: float) -> str:
    return format_rfc3339(T0 + round(seconds * 1_000_000))


def _usd(amount: int) -> dict[str, Any]:
    return {"amount": amount, "currency": "USD", "minor_units": True}


def _fact(record: dict[str, Any]) -> str:
    return f"{record['subject']}|{record['field']}"


def _home(subject: str, field: str) -> int:
    return partition_for(f"{subject}|{field}".encode(), PARTITIONS)


def _filler_subjects() -> Iterator[tuple[int, str]]:
    """(partition, subject) of one-claim `balance` facts, endlessly, round-robin over partitions."""
    pools: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for n in itertools.count():
        subject = f"filler:{n}"
        pools[_home(subject, "balance")].append(subject)
        if all(pools.values()):
            for p in range(PARTITIONS):
                yield p, pools[p].pop(0)


def _clock(until: float, step: float = 2.0, partitions: Iterable[int] | None = None) -> list[dict]:
    """One-claim facts every `step` seconds on the given partitions: they move the file's clock."""
    wanted = set(range(PARTITIONS) if partitions is None else partitions)
    claims: list[dict[str, Any]] = []
    fillers = (s for p, s in _filler_subjects() if p in wanted)
    moment = 0.0
    while moment <= until:
        for _ in wanted:
            subject = next(fillers)
            claims.append(
                envelope(
                    f"{subject}/c",
                    "billing-api",
                    _usd(100),
                    subject=subject,
                    field="balance",
                    observed_at=_at(moment),
                )
            )
        moment += step
    return claims


def _scenario(subject: str, kind: str, start: float) -> list[dict[str, Any]]:
    """The claims of one payment_status fact, all within 0.8 s (one decision window)."""
    c = {
        "agree": [
            ("billing-api", "paid", {}),
            ("ledger-replica", "paid", {}),
            ("reporting-replica", "paid", {}),
        ],
        "lag": [("reporting-replica", "overdue", {}), ("billing-api", "paid", {})],
        "conflict": [
            ("billing-api@us-east-1", "unpaid", {"lineage": "ledger-us"}),
            ("billing-api@eu-west-1", "paid", {"lineage": "ledger-eu"}),
        ],
        "existence": [
            ("billing-api", "paid", {}),
            ("billing-api@eu-west-1", None, {"lineage": "ledger-eu", "status": "not_found"}),
        ],
        "no_evidence": [
            ("billing-api", None, {"status": "unavailable"}),
            ("reporting-replica", None, {"status": "forbidden"}),
        ],
        "rejected": [("billing-api", "bogus", {})],
    }[kind]
    return [
        envelope(
            f"{subject}/{i}",
            source,
            value,
            subject=subject,
            observed_at=_at(start + 0.4 * i),
            **extra,
        )
        for i, (source, value, extra) in enumerate(c)
    ]


KINDS = ("agree", "lag", "conflict", "existence", "no_evidence", "rejected")


def _windowed_stream() -> list[dict[str, Any]]:
    """Facts of several kinds and fields, each fact's claims within one window, in time order."""
    claims: list[dict[str, Any]] = []
    for n in range(18):
        claims += _scenario(f"invoice:W-{n}", KINDS[n % len(KINDS)], start=1.0 + n)
    for n in range(4):
        subject = f"account:W-{n}"
        balance = {"subject": subject, "field": "balance"}
        claims += [
            envelope(
                f"{subject}/a",
                "billing-api",
                _usd(1250),
                observed_at=_at(2.5 + 3 * n),
                **balance,
            ),
            envelope(
                f"{subject}/b",
                "ledger-replica",
                {"amount": "12.50", "currency": "USD"},
                observed_at=_at(3.0 + 3 * n),
                **balance,
            ),
        ]
    risk = {"subject": "customer:W", "field": "risk_score"}
    address = {"subject": "customer:W", "field": "shipping_address"}
    claims += [
        envelope("risk/a", "scorer", 0.42, observed_at=_at(4.2), **risk),
        envelope("risk/b", "billing-api", 0.9, observed_at=_at(4.6), **risk),
        envelope("addr/a", "user", "1 Main  St", observed_at=_at(7.1), **address),
        envelope("addr/b", "crm", "9 Old Road", observed_at=_at(7.5), **address),
        envelope(
            "price/a",
            "billing-api",
            {"amount": "19.99", "currency": "EUR"},
            subject="unit:W",
            field="unit_price",
            observed_at=_at(9.1),
        ),
    ]
    claims += _clock(until=22.0)
    return _in_time_order(claims)


def _in_time_order(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(claims, key=lambda c: (parse_rfc3339(c["observed_at"]), c["claim_id"]))
    _assert_clock_never_jams(ordered)
    return ordered


def _assert_clock_never_jams(claims: list[dict[str, Any]]) -> None:
    """Test-data check: a file has no ticks, so each partition's claims must be < skew apart."""
    last: dict[int, int] = {}
    for claim in claims:
        home = _home(claim["subject"], claim["field"])
        moment = parse_rfc3339(claim["observed_at"])
        assert True is (moment - last.get(home, moment) < SKEW_S * 1_000_000)
        last[home] = max(moment, last.get(home, moment))


def _write(path: Path, claims: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
    return path


def _policy(tmp_path: Path, name: str, *replacements: tuple[str, str]) -> Path:
    text = POLICY.read_text(encoding="utf-8")
    for old, new in replacements:
        assert 1 == text.count(old)
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIMWATCH_")}
    env.update(COLUMNS="200", NO_COLOR="1")
    return env


def _run_all(*calls: list[str]) -> list[subprocess.CompletedProcess[bytes]]:
    """Run several `claimwatch` commands at once; their results in the same order."""
    procs = [
        subprocess.Popen(
            [str(CLAIMWATCH), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        for args in calls
    ]
    done = []
    for args, proc in zip(calls, procs, strict=True):
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return done


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return _run_all(list(args))[0]


def _replay_args(policy: Path, source: Path, *args: str) -> list[str]:
    return ["replay", "--policy", str(policy), "--input", str(source), *args]


def _replay(policy: Path, source: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return _run(*_replay_args(policy, source, *args))


def _decisions(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def _last(decisions: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for record in decisions:
        last[_fact(record)] = record
    return last


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    """The windowed claim stream as a JSON-lines file."""
    return _write(tmp_path / "claims.jsonl", _windowed_stream())


def test_file_replay_is_byte_identical(stream: Path, tmp_path: Path) -> None:
    """Two runs to stdout give the same bytes, equal to --out FILE, with nothing on stderr."""
    out = tmp_path / "decisions.jsonl"
    first, second, third = _run_all(
        _replay_args(POLICY, stream, "--out", "-"),
        _replay_args(POLICY, stream),
        _replay_args(POLICY, stream, "--out", str(out)),
    )
    assert (0, b"") == (first.returncode, first.stderr)
    assert (0, b"") == (second.returncode, second.stderr)
    assert (0, b"", b"") == (third.returncode, third.stderr, third.stdout)
    assert first.stdout == second.stdout
    assert first.stdout == out.read_bytes()
    assert 40 < len(_decisions(first.stdout))


def test_file_replay_matches_resolve_per_fact(stream: Path) -> None:
    """With each fact's claims in one window, the last decision per fact equals `resolve`."""
    replayed, resolved = _run_all(
        _replay_args(POLICY, stream),
        ["resolve", "--policy", str(POLICY), "--now", _at(25.0), str(stream)],
    )
    assert (0, 0) == (replayed.returncode, resolved.returncode)
    expected = {_fact(r): r for r in _decisions(resolved.stdout)}
    actual = _last(_decisions(replayed.stdout))

    def without_time(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k != "decided_at"}

    assert sorted(expected) == sorted(actual)
    assert {k: without_time(v) for k, v in expected.items()} == {
        k: without_time(v) for k, v in actual.items()
    }
    outcomes = {r["outcome"] for r in expected.values()}
    assert {"resolved", "conflict", "insufficient", "rejected"} == outcomes


def test_windows_and_expiry_run_on_the_files_own_clock(tmp_path: Path) -> None:
    """A fact goes stale between other facts' claims of its partition, and only there."""
    policy = _policy(tmp_path, "p10s.yaml", (PAYMENT_60S, PAYMENT_60S.replace("60s", "10s")))
    subject = "invoice:STALE"
    home = _home(subject, "payment_status")
    stale = [envelope("stale/1", "billing-api", "paid", subject=subject, observed_at=_at(0.0))]
    same = _write(tmp_path / "same.jsonl", _in_time_order(stale + _clock(20.0, 1.0, [home])))
    other = (home + 1) % PARTITIONS
    apart = _write(tmp_path / "apart.jsonl", _in_time_order(stale + _clock(20.0, 1.0, [other])))

    proc, elsewhere = _run_all(_replay_args(policy, same), _replay_args(policy, apart))
    assert (0, b"") == (proc.returncode, proc.stderr)
    decisions = _decisions(proc.stdout)
    mine = [d for d in decisions if d["subject"] == subject]
    assert [
        ("resolved", "2026-09-14T09:00:02Z", "won"),
        ("insufficient", "2026-09-14T09:00:10.000001Z", "stale"),
    ] == [(d["outcome"], d["decided_at"], d["claims"][0]["disposition"]) for d in mine]
    assert "all 1 claim(s) exceeded the freshness budget (10s)" == mine[1]["reason"]
    assert True is (mine[0]["decision_id"] != mine[1]["decision_id"])
    # deadlines are processed in order: the expiry sits between the other facts' decisions
    times = [parse_rfc3339(d["decided_at"]) for d in decisions]
    assert sorted(times) == times
    index = decisions.index(mine[1])
    assert [_at(10.0), _at(11.0)] == [
        decisions[index - 1]["decided_at"],
        decisions[index + 1]["decided_at"],
    ]

    assert 0 == elsewhere.returncode
    mine = [d for d in _decisions(elsewhere.stdout) if d["subject"] == subject]
    assert [("resolved", "2026-09-14T09:00:02Z")] == [(d["outcome"], d["decided_at"]) for d in mine]


def _diff_stream() -> tuple[list[dict[str, Any]], set[str], dict[str, list[str]]]:
    """Early and late payment_status facts, balance facts, and the clock running to 30 s.

    Returns the claims, the payment_status facts, and what a 10 s payment_status budget
    changes: the early facts that had evidence, with the fields of the change.
    """
    claims: list[dict[str, Any]] = []
    payment: set[str] = set()
    changed: dict[str, list[str]] = {}
    for n, kind in enumerate(KINDS * 2):
        subject = f"invoice:D-{n}"
        late = n >= len(KINDS)
        claims += _scenario(subject, kind, start=24.0 + 0.2 * n if late else 0.5 + 0.3 * n)
        payment.add(f"{subject}|payment_status")
        if not late and kind in ("agree", "lag"):
            changed[f"{subject}|payment_status"] = ["outcome", "canonical", "action"]
        elif not late and kind in ("conflict", "existence"):
            changed[f"{subject}|payment_status"] = ["outcome"]
    for n in range(6):
        subject = f"account:D-{n}"
        claims.append(
            envelope(
                f"{subject}/a",
                "billing-api",
                _usd(n),
                subject=subject,
                field="balance",
                observed_at=_at(1.0 + 0.5 * n),
            )
        )
    return _in_time_order(claims + _clock(30.0)), payment, changed


def test_diff_against_file_lists_only_the_changed_field(tmp_path: Path) -> None:
    """A shorter payment_status budget changes exactly the early payment_status facts."""
    claims, payment, expected = _diff_stream()
    source = _write(tmp_path / "claims.jsonl", claims)
    shorter = _policy(
        tmp_path,
        "p2.yaml",
        (PAYMENT_60S, PAYMENT_60S.replace("60s", "10s")),
        ("policy_version: arbitration-2026-09", "policy_version: arbitration-2026-10"),
    )
    recorded, replayed, changes = (tmp_path / n for n in ("old.jsonl", "new.jsonl", "ch.jsonl"))
    assert 0 == _replay(POLICY, source, "--out", str(recorded)).returncode

    proc = _replay(
        shorter,
        source,
        "--out",
        str(replayed),
        "--diff-against",
        str(recorded),
        "--changes",
        str(changes),
    )
    assert 0 == proc.returncode
    listed = _decisions(changes.read_bytes())
    assert expected == {c["fact"]: c["changed"] for c in listed}
    assert {"payment_status"} == {c["field"] for c in listed}
    old, new = _last(_decisions(recorded.read_bytes())), _last(_decisions(replayed.read_bytes()))
    for change in listed:
        fact = change["fact"]
        assert (old[fact]["decision_id"], new[fact]["decision_id"]) == (
            change["old"]["decision_id"],
            change["new"]["decision_id"],
        )
        assert (old[fact]["outcome"], "insufficient") == (
            change["old"]["outcome"],
            change["new"]["outcome"],
        )
    # every fact is compared: unchanged ones (other fields, late payment facts) are not listed
    assert set(old) == set(new)
    assert True is (len(payment) > len(expected) > 0)

    rows = {cells[0]: cells[1:] for cells in _table_rows(proc.stderr.decode())}
    assert {
        "balance": [str(len(set(new) - payment)), "0", ""],
        "payment_status": [
            str(len(payment)),
            str(len(expected)),
            "conflict -> insufficient: 2, resolved -> insufficient: 2",
        ],
    } == rows


def _table_rows(table: str) -> list[list[str]]:
    """The body rows of a rich table, as stripped cells."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]


def test_live_topic_is_refused(stream: Path) -> None:
    """--to-topic naming a live topic (of the default or a given prefix) is refused with exit 2."""
    calls = {
        "claimwatch.decisions": [],
        "claimwatch.resolutions": [],
        "acme.alerts": ["--topic-prefix", "acme."],
    }
    procs = _run_all(
        *(_replay_args(POLICY, stream, *extra, "--to-topic", name) for name, extra in calls.items())
    )
    assert [
        (2, b"", f"claimwatch: {name} is a live topic: replay writes only to a topic of your own\n")
        for name in calls
    ] == [(p.returncode, p.stdout, p.stderr.decode()) for p in procs]


def test_checkpoint_needs_an_output_file(stream: Path, tmp_path: Path) -> None:
    """--checkpoint without --out FILE is bad usage (exit 2)."""
    proc = _replay(POLICY, stream, "--checkpoint", str(tmp_path / "ck.json"))
    assert (2, b"") == (proc.returncode, proc.stdout)
    assert b"claimwatch: --checkpoint needs --out FILE (the output is resumed too)\n" == (
        proc.stderr
    )
    assert False is (tmp_path / "ck.json").exists()


def test_bad_policy_exits_2(stream: Path, tmp_path: Path) -> None:
    """An invalid or unreadable policy is refused with exit 2, naming the file, line and key."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy_version: x\nfields:\n  balance: {type: money, freshnes: 60s}\n")
    proc, missing = _run_all(
        _replay_args(bad, stream), _replay_args(tmp_path / "missing.yaml", stream)
    )
    assert (2, b"") == (proc.returncode, proc.stdout)
    assert (
        f"claimwatch: {bad}:3: fields.balance.freshnes: unknown key (check the spelling "
        "against docs/reference/policy.md)\n"
    ).encode() == proc.stderr
    assert (2, b"") == (missing.returncode, missing.stdout)
    assert (
        f"claimwatch: {tmp_path / 'missing.yaml'}: (top level): cannot read: "
        == (
            missing.stderr.decode()[
                : len(f"claimwatch: {tmp_path / 'missing.yaml'}: (top level): cannot read: ")
            ]
        )
    )


def test_unreadable_input_and_unreachable_broker(tmp_path: Path) -> None:
    """A missing input file is bad usage (2); a broker that cannot be reached fails with 1."""
    missing, dead = _run_all(
        _replay_args(POLICY, tmp_path / "missing.jsonl"),
        ["replay", "--policy", str(POLICY), "--from-beginning", "--bootstrap", "127.0.0.1:9"],
    )
    assert (2, b"") == (missing.returncode, missing.stdout)
    assert (
        f"claimwatch: {tmp_path / 'missing.jsonl'}: cannot read: No such file or directory\n"
    ).encode() == missing.stderr
    assert (1, b"") == (dead.returncode, dead.stdout)
    head = b"claimwatch: no Kafka broker answered at 127.0.0.1:9. Start one"
    assert [head] == [line[: len(head)] for line in dead.stderr.splitlines()]


def test_malformed_line_is_reported_and_the_rest_replayed(tmp_path: Path) -> None:
    """Bad lines are reported as file:line with exit 1; the other lines replay as without them."""
    claims = [json.dumps(c) for c in _windowed_stream()]
    broken = [*claims[:2], "{not json", *claims[2:5], '{"claim_id": "x"}', *claims[5:]]
    bad = tmp_path / "broken.jsonl"
    bad.write_text("\n".join(broken) + "\n", encoding="utf-8")
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(claims) + "\n", encoding="utf-8")

    proc, without = _run_all(_replay_args(POLICY, bad), _replay_args(POLICY, clean))
    assert (1, 0) == (proc.returncode, without.returncode)
    lines = proc.stderr.decode().splitlines()
    assert 2 == len(lines)
    assert (
        f"claimwatch: {bad}:3: claim: not JSON"
        == lines[0][: len(f"claimwatch: {bad}:3: claim: not JSON")]
    )
    assert f"claimwatch: {bad}:7: claim: missing required key `subject`" == lines[1]
    assert without.stdout == proc.stdout


def test_progress_bar_only_on_a_terminal(stream: Path, tmp_path: Path) -> None:
    """With stderr on a terminal a progress bar is drawn; piped, stderr stays empty."""
    piped = _replay(POLICY, stream)
    assert (0, b"") == (piped.returncode, piped.stderr)

    out = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIMWATCH_")}
    env.update(COLUMNS="120", TERM="xterm")
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [str(CLAIMWATCH), *_replay_args(POLICY, stream, "--out", str(out))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    drawn = b""
    try:
        while chunk := _read_terminal(controller):
            drawn += chunk
    finally:
        os.close(controller)
    assert (0, piped.stdout) == (proc.wait(timeout=120), out.read_bytes())
    assert True is (f"replaying {stream}".encode() in drawn)


def _read_terminal(controller: int) -> bytes:
    """What the terminal shows next; empty once the program closed it."""
    try:
        return os.read(controller, 65536)
    except OSError:  # EIO: every writer has closed the terminal
        return b""


def test_replay_alerts_file_names_the_lagging_replica(tmp_path: Path) -> None:
    """--alerts: the detectors run over the replay; a replica 6 s behind its owner pages."""
    policy = tmp_path / "lag.yaml"
    policy.write_text(
        "policy_version: lag-test\n"
        "defaults: {freshness: 5m, settle: 0s}\n"
        "sources:\n"
        "  billing-api: {authority: system_of_record, lineage: ledger}\n"
        "  reporting-replica: {authority: derived, lineage: reporting}\n"
        "fields:\n"
        "  payment_status: {type: enum, values: [paid, unpaid], freshness: 2s,"
        " owner: billing-api}\n"
        "alerts:\n  replica_lag: {evaluation: 20s, min_samples: 3}\n",
        encoding="utf-8",
    )
    lines = []
    for step, parts in enumerate(
        [
            [("billing-api", "unpaid"), ("reporting-replica", "unpaid")],
            [("billing-api", "paid"), ("reporting-replica", "unpaid")],
            [("reporting-replica", "unpaid")],
            [("reporting-replica", "paid")],
        ]
    ):
        second = [0, 1, 4, 7][step]
        for i in range(8):
            for source, value in parts:
                at = f"2026-11-29T10:00:0{second}.{i}00000Z"
                claim = envelope(
                    f"{source}-{i}-{step}", source, value, subject=f"invoice:{i}", observed_at=at
                )
                lines.append(json.dumps(claim))
    claims = tmp_path / "lag.jsonl"
    claims.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = []
    for run in ("a", "b"):
        alerts = tmp_path / f"alerts-{run}.jsonl"
        done = subprocess.run(
            [
                str(CLAIMWATCH),
                "replay",
                "--policy",
                str(policy),
                "--input",
                str(claims),
                "--out",
                str(tmp_path / f"d-{run}.jsonl"),
                "--alerts",
                str(alerts),
            ],
            capture_output=True,
        )
        assert 0 == done.returncode, done.stderr
        outputs.append(alerts.read_bytes())
    assert outputs[0] == outputs[1]
    found = [json.loads(line) for line in outputs[0].splitlines()]
    lag = [(a["kind"], a["source"], a["status"]) for a in found if a["kind"] == "replica_lag"]
    assert ("replica_lag", "reporting-replica", "lagging") in lag
