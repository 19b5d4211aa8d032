"""The command line registers only the command it runs, and every command for --help."""

from __future__ import annotations

import subprocess
import sys

import pytest
from claimwatch.cli.main import COMMANDS, build

from tests.support.paths import REPO

#: modules a command that does not talk to Kafka must not pay for at start-up
HEAVY = ("aiokafka", "faust", "claimwatch.worker.run", "claimwatch.sim.simulate")


def imported_by(argv: list[str]) -> set[str]:
    """The HEAVY modules a fresh interpreter has imported once `build(argv)` returns."""
    code = (
        "import sys\n"
        "from claimwatch.cli.main import build\n"
        f"build({argv!r})\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return {m for m in out.stdout.strip().split(",") if m}


@pytest.mark.parametrize("command", ["resolve", "compare-text", "merge", "argue"])
def test_an_offline_command_imports_no_kafka_client_worker_or_simulator(command: str) -> None:
    """Offline commands start without importing aiokafka, Faust, the worker or the simulator."""
    assert set() == imported_by([command, "--help"])


def test_no_command_named_registers_every_command() -> None:
    """`claimwatch --help` (or an unknown word) lists every command."""
    for argv in ([], ["--help"], ["no-such-command"]):
        names = {c.name for c in build(argv).registered_commands}
        assert set(COMMANDS) == names


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_named_command_is_the_only_one_registered(command: str) -> None:
    """`claimwatch <command> ...` registers that command alone."""
    assert [command] == [c.name for c in build([command, "--x"]).registered_commands]
