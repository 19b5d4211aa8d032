"""Every command that talks to Kafka says so in one line when no broker answers."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli
from tests.support.kafka import free_port
from tests.support.paths import REPO

POLICY = str(REPO / "examples" / "policy.yaml")
CLAIMS = str(REPO / "examples" / "claims.jsonl")
CLOSED = "127.0.0.1:1"


@pytest.mark.parametrize(
    "args",
    [
        ("publish", CLAIMS),
        ("decisions",),
        ("dlq", "--from-beginning"),
        ("explain", "dec_x", "--from", "decisions"),
        ("replay", "-p", POLICY, "--from-beginning"),
        ("simulate", "--live", "--scenario", "demo", "--duration", "2s"),
        ("worker", "-p", POLICY, "--web-port", "{port}", "--data-dir", "{tmp}"),
    ],
    ids=lambda args: args[0] if args[0] != "explain" else "explain --from",
)
def test_no_broker_is_one_line_naming_the_address_and_what_to_do(
    args: tuple[str, ...], tmp_path: object
) -> None:
    argv = [a.format(port=free_port(), tmp=tmp_path) for a in args]
    done = run_cli(*argv, "--bootstrap", CLOSED)
    said = done.stderr.decode()
    expected = f"claimwatch: no Kafka broker answered at {CLOSED}. Start one"
    assert (1, True) == (done.returncode, expected in said), said
    assert "Traceback" not in said
