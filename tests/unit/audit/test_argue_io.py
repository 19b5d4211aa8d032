"""Argumentation file formats (ICCMA 2023, apx) and the `claimwatch argue` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claimwatch.audit.argue import (
    ArgueFormatError,
    detect_format,
    read_apx,
    read_framework,
    read_i23,
    write_apx,
    write_i23,
)

CLAIMWATCH = Path(sys.executable).with_name("claimwatch")

# ---------------------------------------------------------------- formats

APX = """% a comment line
arg(a).  arg(b).
arg( c ) .   % trailing comment
att(a,b). att( b , c ).
# hash comment too

"""


def test_apx_reader_tolerates_comments_and_whitespace() -> None:
    """Several statements per line, spaces inside, % and # comments, blank lines."""
    framework = read_apx(APX, "x.apx")
    assert ["a", "b", "c"] == list(framework.names)
    assert [("a", "b"), ("b", "c")] == framework.attack_pairs()


def test_i23_reader_tolerates_comments_and_whitespace() -> None:
    """Comments before the header and between attacks, extra spaces, blank lines."""
    text = "# made by hand\n\np af 3\n1 2   # one on two\n\n  2\t3\n"
    framework = read_i23(text, "x.i23")
    assert ["1", "2", "3"] == list(framework.names)
    assert [("1", "2"), ("2", "3")] == framework.attack_pairs()


def test_formats_round_trip() -> None:
    """Writing then reading gives the same arguments and attacks, in both formats."""
    apx = read_apx(APX)
    assert apx.attack_pairs() == read_apx(write_apx(apx)).attack_pairs()
    assert apx.names == read_apx(write_apx(apx)).names
    i23 = read_i23("p af 4\n1 2\n2 1\n3 3\n4 1\n")
    again = read_i23(write_i23(i23))
    assert (i23.names, i23.attack_pairs()) == (again.names, again.attack_pairs())
    assert "p af 4\n1 2\n2 1\n3 3\n4 1\n" == write_i23(i23)


def test_i23_writer_numbers_named_arguments_and_notes_the_names() -> None:
    """Names that are not 1..N are numbered in argument order and listed as comments."""
    text = write_i23(read_apx(APX))
    assert "p af 3\n# 1 a\n# 2 b\n# 3 c\n1 2\n2 3\n" == text
    assert [("1", "2"), ("2", "3")] == read_i23(text).attack_pairs()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("1 2\n", "f.i23:1: expected the header `p af N`, got '1 2'"),
        ("p af 2\n1 2\n1 3\n", "f.i23:3: argument 3 is outside 1..2"),
        ("p af 2\n\n1 x\n", "f.i23:3: expected an attack `a b` of two numbers, got '1 x'"),
        ("# only\n", "f.i23:1: no `p af N` header"),
        ("p af 2\np af 3\n", "f.i23:2: second header (the first is on line 1)"),
    ],
)
def test_i23_errors_name_the_line(text: str, error: str) -> None:
    """Every i23 error is FILE:LINE: reason."""
    with pytest.raises(ArgueFormatError) as caught:
        read_i23(text, "f.i23")
    assert error == str(caught.value)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("arg(a).\n\natt(a,b).\n", "f.apx:3: attack names undeclared argument 'b'"),
        (
            "arg(a).\narg(b) att(a,b).\n",
            "f.apx:2: expected `arg(name).` or `att(name,name).`, got 'arg(b) att(a,b).'",
        ),
        ("arg(a). junk\n", "f.apx:1: expected `arg(name).` or `att(name,name).`, got 'junk'"),
    ],
)
def test_apx_errors_name_the_line(text: str, error: str) -> None:
    """Every apx error is FILE:LINE: reason; undeclared arguments are errors, not dropped."""
    with pytest.raises(ArgueFormatError) as caught:
        read_apx(text, "f.apx")
    assert error == str(caught.value)


def test_format_detection() -> None:
    """By extension first, else by the first statement."""
    assert ("i23", "apx", "i23", "apx") == (
        detect_format("", "x.i23"),
        detect_format("", "x.apx"),
        detect_format("# c\np af 1\n", "x.txt"),
        detect_format("% c\narg(a).\n", "x.txt"),
    )
    assert ["a"] == list(read_framework("arg(a).", "x").names)


# ---------------------------------------------------------------- CLI


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIMWATCH), "argue", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_prints_extensions_as_json(tmp_path: Path) -> None:
    """`claimwatch argue` prints sorted lists of names for each semantics and format."""
    apx = tmp_path / "floating.apx"
    apx.write_text(
        "arg(a). arg(b). arg(c). arg(d).\natt(a,b). att(b,a). att(a,c). att(b,c). att(c,d).\n"
    )
    i23 = tmp_path / "chain.i23"
    i23.write_text("p af 3\n1 2\n2 3\n")
    assert (0, [["a", "d"], ["b", "d"]], "") == _parsed(_cli("--semantics", "preferred", str(apx)))
    assert (0, [[]], "") == _parsed(_cli(str(apx)))
    assert (0, [["1", "3"]], "") == _parsed(_cli("--format", "i23", "-", stdin=i23.read_text()))


def _parsed(done: subprocess.CompletedProcess[str]) -> tuple[int, Any, str]:
    return done.returncode, json.loads(done.stdout) if done.stdout else None, done.stderr


def test_cli_exit_codes_and_line_errors(tmp_path: Path) -> None:
    """Bad file or bad usage exit 2 with the file and line named."""
    bad = tmp_path / "bad.apx"
    bad.write_text("arg(a).\natt(a,zz).\n")
    done = _cli(str(bad))
    assert (2, f"claimwatch: {bad}:2: attack names undeclared argument 'zz'\n") == (
        done.returncode,
        done.stderr,
    )
    assert 2 == _cli("--semantics", "ideal", str(bad)).returncode
    assert 2 == _cli("--format", "tgf", str(bad)).returncode
    assert 2 == _cli(str(tmp_path / "missing.apx")).returncode
