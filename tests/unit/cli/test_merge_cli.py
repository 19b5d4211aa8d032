"""`claimwatch merge` through the real console script: output and exit codes 0, 1 and 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLAIMWATCH = Path(sys.executable).with_name("claimwatch")


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run `claimwatch ARGS` with no stdin."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [str(CLAIMWATCH), *args],
        input=b"",
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )


def _files(tmp: Path, base: bytes, ours: bytes, theirs: bytes) -> list[str]:
    """Write the three versions and return their paths as BASE OURS THEIRS."""
    paths = []
    for name, data in (("base.md", base), ("ours.md", ours), ("theirs.md", theirs)):
        (tmp / name).write_bytes(data)
        paths.append(str(tmp / name))
    return paths


def test_clean_merge_prints_the_text_and_exits_0(tmp_path: Path) -> None:
    """Edits of adjacent lines merge: the merged text on stdout, nothing on stderr, exit 0."""
    paths = _files(tmp_path, b"a\nb\nc\n", b"A\nb\nc\n", b"a\nB\nc\n")
    done = _run("merge", *paths)
    assert (0, b"A\nB\nc\n", b"") == (done.returncode, done.stdout, done.stderr)


def test_bytes_are_kept_exactly(tmp_path: Path) -> None:
    """CRLF endings and a missing final newline come through unchanged."""
    paths = _files(tmp_path, b"a\r\nb", b"A\r\nb", b"a\r\nB")
    done = _run("merge", *paths)
    assert (0, b"A\r\nB") == (done.returncode, done.stdout)


def test_conflicts_print_markers_and_exit_1(tmp_path: Path) -> None:
    """A line both sides change differently: markers on stdout, the count on stderr, exit 1."""
    paths = _files(tmp_path, b"a\nb\nc\n", b"a\nX\nc\n", b"a\nY\nc\n")
    done = _run("merge", *paths)
    expected = b"a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nc\n"
    assert (1, expected) == (done.returncode, done.stdout)
    assert b"claimwatch: 1 conflict(s) left in the output\n" == done.stderr


def test_diff3_style_shows_the_base(tmp_path: Path) -> None:
    """--style diff3 adds the base lines to each conflict."""
    paths = _files(tmp_path, b"a\nb\nc\n", b"a\nX\nc\n", b"a\nY\nc\n")
    done = _run("merge", *paths, "--style", "diff3")
    expected = b"a\n<<<<<<< ours\nX\n||||||| base\nb\n=======\nY\n>>>>>>> theirs\nc\n"
    assert (1, expected) == (done.returncode, done.stdout)


def test_missing_file_exits_2_naming_it(tmp_path: Path) -> None:
    """A file that does not exist: exit 2, its name in the message, nothing on stdout."""
    base, ours, _ = _files(tmp_path, b"a\n", b"a\n", b"a\n")
    missing = str(tmp_path / "gone.md")
    done = _run("merge", base, ours, missing)
    assert (2, b"") == (done.returncode, done.stdout)
    assert f"claimwatch: {missing}: cannot read: No such file or directory\n" == (
        done.stderr.decode()
    )


def test_undecodable_file_exits_2_naming_it(tmp_path: Path) -> None:
    """A file that is not UTF-8: exit 2 with its name and the offending byte."""
    base, ours, theirs = _files(tmp_path, b"a\n", b"a\n\xff\n", b"a\n")
    done = _run("merge", base, ours, theirs)
    assert (2, b"") == (done.returncode, done.stdout)
    assert f"claimwatch: {ours}: cannot read: not UTF-8 (byte 2)\n" == done.stderr.decode()


def test_unknown_style_exits_2(tmp_path: Path) -> None:
    """A style other than merge or diff3 is bad usage."""
    paths = _files(tmp_path, b"a\n", b"b\n", b"c\n")
    done = _run("merge", *paths, "--style", "zdiff3")
    assert (2, b"") == (done.returncode, done.stdout)
    assert b"claimwatch: --style: 'zdiff3' is not one of merge, diff3\n" == done.stderr


def test_missing_argument_exits_2(tmp_path: Path) -> None:
    """Two files instead of three is a usage error naming the missing argument."""
    base, ours, _ = _files(tmp_path, b"a\n", b"a\n", b"a\n")
    done = _run("merge", base, ours)
    assert 2 == done.returncode
    assert b"THEIRS" in done.stderr
