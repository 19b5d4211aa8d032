"""`claimwatch compare-text`: JSON lines of pairs in, one verdict per line out, in order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
PAIRS = [
    {"left": "The notice period is 30 days.", "right": "The notice period is 60 days."},
    {"left": "通知期間は３０日です。", "right": "通知期間は６０日です。"},
    {"left": "The vendor shall notify us.", "right": "The vendor must notify us."},
    {"left": "The drug is excreted by the kidneys.", "right": "The dose is 4 g."},
]
VERDICTS = [
    {"conflict": True, "rule": "value", "detail": "30 vs 60", "duplicate": False},
    {"conflict": True, "rule": "value", "detail": "30 vs 60", "duplicate": False},
    {"conflict": False, "rule": None, "detail": None, "duplicate": True},
    {"conflict": False, "rule": None, "detail": None, "duplicate": False},
]


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CLAIMWATCH), "compare-text", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _lines(pairs: list[object]) -> bytes:
    return "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs).encode()


def test_stdin_gives_one_verdict_per_line_in_order() -> None:
    """Pairs from stdin: one verdict each, in input order, exit 0."""
    result = _run(stdin=_lines(PAIRS))
    assert (0, b"") == (result.returncode, result.stderr)
    assert VERDICTS == [json.loads(line) for line in result.stdout.splitlines()]


def test_file_argument_and_dash_read_the_same(tmp_path: Path) -> None:
    """A FILE argument and `-` (stdin) give byte-identical output."""
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(_lines(PAIRS))
    assert _run(str(path)).stdout == _run("-", stdin=_lines(PAIRS)).stdout


def test_bad_lines_keep_their_place_and_exit_1() -> None:
    """A bad line gets an error object in its place, is named on stderr, and the exit is 1."""
    stdin = _lines([PAIRS[0]]) + b"not json\n\n" + _lines([{"left": "x"}, PAIRS[1]])
    result = _run(stdin=stdin)
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert 1 == result.returncode
    assert [VERDICTS[0], ["error"], ["error"], VERDICTS[1]] == [
        sorted(o) if "error" in o else o for o in out
    ]
    assert ["<stdin>:2", "<stdin>:4"] == [
        line.split(": ")[1] for line in result.stderr.decode().splitlines()
    ]


def test_unreadable_file_is_bad_usage(tmp_path: Path) -> None:
    """A file that cannot be read exits 2 with its name in the message."""
    path = tmp_path / "absent.jsonl"
    result = _run(str(path))
    message = f"claimwatch: {path}: cannot read: No such file or directory\n"
    assert (2, message) == (result.returncode, result.stderr.decode())
