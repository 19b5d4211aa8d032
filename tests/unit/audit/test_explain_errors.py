"""`claimwatch explain` on input that is not a decision: one line naming it, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (b'{"decision_id":"x"}\nnot json\n', "2: not a decision: invalid literal"),
        (b'{"decision_id":"x"}\n[1]\n', "2: not a decision: not a JSON object"),
        (b'{"decision_id":"x"}\n', "decision x is not a complete decision record (KeyError"),
    ],
)
def test_explain_names_what_is_wrong_from_a_file_and_from_stdin(
    tmp_path: Path, lines: bytes, expected: str
) -> None:
    """Exit 1 with the file (or <stdin>), the line and the reason; no traceback."""
    path = tmp_path / "decisions.jsonl"
    path.write_bytes(lines)
    for result in (
        run_cli("explain", "x", "--from", str(path)),
        run_cli("explain", "x", stdin=lines),
    ):
        err = result.stderr.decode()
        assert 1 == result.returncode
        assert expected in err
        assert "Traceback" not in err
