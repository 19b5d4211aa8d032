"""The real `claimwatch` console script: output, input forms, line errors and exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.claims import claim_line, envelope
from tests.support.cli import CLAIMWATCH, run_cli
from tests.support.paths import REPO

ROOT = REPO
POLICY = ROOT / "examples" / "policy.yaml"
CLAIMS = ROOT / "examples" / "claims.jsonl"
NOW = "2026-09-14T09:12:30Z"


def _resolve(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_cli("resolve", "--policy", str(POLICY), "--now", NOW, *args, stdin=stdin)


def _decisions(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_console_script_is_installed() -> None:
    """The console script sits next to the interpreter running the tests."""
    assert True is CLAIMWATCH.exists()


def test_resolve_example_is_byte_identical_and_sorted() -> None:
    """Two runs on the example give the same bytes, one decision per fact, sorted by fact."""
    first, second = _resolve(str(CLAIMS)), _resolve(str(CLAIMS))
    assert (0, b"") == (first.returncode, first.stderr)
    assert first.stdout == second.stdout
    keys = [(d["subject"], d["field"]) for d in _decisions(first.stdout)]
    facts = {(c["subject"], c["field"]) for c in map(json.loads, CLAIMS.read_text().splitlines())}
    assert sorted(facts) == keys
    assert {NOW} == {d["decided_at"] for d in _decisions(first.stdout)}


def test_stdin_dash_and_no_argument_equal_file_input() -> None:
    """`-` and no FILE read stdin and give exactly what the file argument gives."""
    from_file = _resolve(str(CLAIMS))
    data = CLAIMS.read_bytes()
    dash = _resolve("-", stdin=data)
    bare = _resolve(stdin=data)
    assert (0, 0, 0) == (from_file.returncode, dash.returncode, bare.returncode)
    assert from_file.stdout == dash.stdout
    assert from_file.stdout == bare.stdout


def test_bad_lines_are_reported_and_the_rest_resolved(tmp_path: Path) -> None:
    """Malformed, subject-less and conflicting-id lines are named on stderr; the rest resolves."""
    at = "2026-09-14T09:12:03Z"
    missing_subject = envelope("c-2", "billing-api", "paid", observed_at=at)
    del missing_subject["subject"]
    lines = [
        claim_line("c-1", "billing-api", "paid", observed_at=at),
        b"{this is not json",
        orjson.dumps(missing_subject),
        claim_line("c-1", "billing-api", "unpaid", observed_at=at),
        claim_line("c-3", "billing-api", "unpaid", subject="invoice:INV-2", observed_at=at),
        claim_line("c-1", "billing-api", "paid", observed_at=at),
    ]
    claims = tmp_path / "claims.jsonl"
    claims.write_bytes(b"\n".join(lines) + b"\n")
    done = _resolve(str(claims))
    assert 1 == done.returncode
    errors = done.stderr.decode().splitlines()
    assert 3 == len(errors), errors
    assert f"{claims}:2:" in errors[0]
    assert "JSON" in errors[0]
    assert f"{claims}:3:" in errors[1]
    assert "subject" in errors[1]
    assert f"{claims}:4:" in errors[2]
    assert "claim_id" in errors[2]
    assert "c-1" in errors[2]
    decisions = {(d["subject"], d["field"]): d for d in _decisions(done.stdout)}
    assert [("invoice:INV-1", "payment_status"), ("invoice:INV-2", "payment_status")] == sorted(
        decisions
    )
    first = decisions[("invoice:INV-1", "payment_status")]
    assert ("resolved", "paid") == (first["outcome"], first["value"])
    assert ["c-1"] == [c["claim_id"] for c in first["claims"]]
    second = decisions[("invoice:INV-2", "payment_status")]
    assert ("resolved", "unpaid") == (second["outcome"], second["value"])


def test_bad_policy_exits_2_naming_the_key(tmp_path: Path) -> None:
    """A policy that does not validate is refused with exit 2 and the offending key."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "policy_version: v1\nfields:\n  balance: {type: money, freshness: 60s}\n", encoding="utf-8"
    )
    done = run_cli("resolve", "--policy", str(policy), "--now", NOW, str(CLAIMS))
    stderr = done.stderr.decode()
    assert 2 == done.returncode
    assert b"" == done.stdout
    assert "fields.balance" in stderr
    assert f"{policy}:3" in stderr
    assert "currency" in stderr


def test_missing_policy_file_exits_2(tmp_path: Path) -> None:
    """A policy path that does not exist is bad usage: exit 2, the path on stderr."""
    missing = tmp_path / "nope.yaml"
    done = run_cli("resolve", "--policy", str(missing), "--now", NOW, str(CLAIMS))
    assert 2 == done.returncode
    assert b"" == done.stdout
    assert str(missing) in done.stderr.decode()


#: Every command that loads a policy, given the policy path: its arguments before the options.
POLICY_COMMANDS = {
    "resolve": lambda policy: ["resolve", "--policy", policy, "--now", NOW, str(CLAIMS)],
    "worker": lambda policy: ["worker", "--policy", policy],
    "replay": lambda policy: ["replay", "--policy", policy, "--input", str(CLAIMS)],
}


@pytest.mark.parametrize("command", sorted(POLICY_COMMANDS))
def test_oversized_policy_exits_2_with_its_size(tmp_path: Path, command: str) -> None:
    """A 50 MB policy is refused by every command with exit 2 and one line: size and limit."""
    big = tmp_path / "policy.yaml"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    done = run_cli(*POLICY_COMMANDS[command](str(big)))
    expected = (
        f"claimwatch: {big}: 52428800 bytes exceeds the 1048576-byte policy limit "
        "(--max-policy-bytes)\n"
    )
    assert (2, b"", expected) == (done.returncode, done.stdout, done.stderr.decode())


@pytest.mark.parametrize("command", sorted(POLICY_COMMANDS))
def test_max_policy_bytes_lowers_the_limit(command: str) -> None:
    """`--max-policy-bytes` below the example's size refuses it with exit 2, naming the limit."""
    done = run_cli(*POLICY_COMMANDS[command](str(POLICY)), "--max-policy-bytes", "100")
    size = POLICY.stat().st_size
    expected = (
        f"claimwatch: {POLICY}: {size} bytes exceeds the 100-byte policy limit "
        "(--max-policy-bytes)\n"
    )
    assert (2, expected) == (done.returncode, done.stderr.decode())


@pytest.mark.parametrize("command", ["resolve", "replay"])
def test_max_policy_bytes_raises_the_limit(tmp_path: Path, command: str) -> None:
    """A policy padded past 1 MiB is refused by default and decides like the example if allowed."""
    padded = tmp_path / "policy.yaml"
    padded.write_bytes(POLICY.read_bytes() + b"#" * (1024 * 1024))
    refused = run_cli(*POLICY_COMMANDS[command](str(padded)))
    allowed = run_cli(*POLICY_COMMANDS[command](str(padded)), "--max-policy-bytes", "2097152")
    example = run_cli(*POLICY_COMMANDS[command](str(POLICY)))
    assert (2, 0) == (refused.returncode, allowed.returncode)
    assert "1048576-byte policy limit" in refused.stderr.decode()
    assert example.stdout == allowed.stdout


@pytest.mark.parametrize(
    ("args", "env"), [(("--loop", "trio"), {}), ((), {"CLAIMWATCH_LOOP": "trio"})]
)
def test_an_unknown_event_loop_exits_2(args: tuple[str, ...], env: dict[str, str]) -> None:
    """`--loop trio` (or CLAIMWATCH_LOOP=trio) is bad usage: exit 2 naming the choices."""
    done = run_cli("worker", "--policy", str(POLICY), *args, env=env)
    expected = (
        "claimwatch: event loop 'trio' (--loop or CLAIMWATCH_LOOP): choose one of uvloop, asyncio\n"
    )
    assert (2, expected) == (done.returncode, done.stderr.decode())


def test_max_policy_bytes_must_be_positive() -> None:
    """A limit of zero is bad usage: exit 2 naming the option."""
    done = run_cli("resolve", "--policy", str(POLICY), "--max-policy-bytes", "0", str(CLAIMS))
    assert 2 == done.returncode
    assert "--max-policy-bytes" in done.stderr.decode()


def test_invalid_utf8_policy_exits_2_naming_line_and_offset(tmp_path: Path) -> None:
    """A policy with a byte that is not UTF-8: exit 2, one line naming the line and byte offset."""
    policy = tmp_path / "policy.yaml"
    policy.write_bytes(POLICY.read_bytes() + b"# caf\xe9\n")
    done = run_cli(*POLICY_COMMANDS["resolve"](str(policy)))
    offset = POLICY.stat().st_size + len(b"# caf")
    line = POLICY.read_bytes().count(b"\n") + 1
    expected = f"claimwatch: {policy}:{line}: invalid UTF-8 byte 0xe9 at byte offset {offset}\n"
    assert (2, b"", expected) == (done.returncode, done.stdout, done.stderr.decode())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("policy_version: v1\nfields: {a: 1\n", "invalid YAML"),
        ("- policy_version\n", "must be a mapping"),
    ],
    ids=["yaml_syntax_error", "top_level_list"],
)
def test_policy_that_is_no_mapping_exits_2_in_one_line(
    tmp_path: Path, text: str, words: str
) -> None:
    """Bad YAML or a non-mapping top level: exit 2 and a single stderr line, no traceback."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(text, encoding="utf-8")
    done = run_cli(*POLICY_COMMANDS["resolve"](str(policy)))
    stderr = done.stderr.decode()
    assert (2, 1) == (done.returncode, len(stderr.splitlines()))
    assert words in stderr
    assert f"{policy}:" in stderr


def test_missing_claims_file_exits_2(tmp_path: Path) -> None:
    """A claims file that does not exist is bad usage: exit 2, the path on stderr."""
    missing = tmp_path / "nope.jsonl"
    done = _resolve(str(missing))
    assert 2 == done.returncode
    assert str(missing) in done.stderr.decode()


def test_bad_now_exits_2() -> None:
    """An unparseable --now is bad usage: exit 2, naming the option and the value."""
    done = run_cli("resolve", "--policy", str(POLICY), "--now", "yesterday", str(CLAIMS))
    stderr = done.stderr.decode()
    assert 2 == done.returncode
    assert b"" == done.stdout
    assert "--now" in stderr
    assert "yesterday" in stderr


def test_help_lists_resolve() -> None:
    """`claimwatch --help` succeeds and lists the resolve command."""
    done = run_cli("--help")
    assert 0 == done.returncode
    assert "resolve" in done.stdout.decode()
