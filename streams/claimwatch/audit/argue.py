"""Read and write argumentation frameworks: ICCMA 2023 (`p af N`) and apx (`arg(a).`)."""

from __future__ import annotations

import re
from typing import Final, Literal

from claimwatch.core.argue.framework import Framework, FrameworkError

Format = Literal["i23", "apx"]
FORMATS: Final = ("i23", "apx")

_HEADER: Final = re.compile(r"p\s+af\s+(\d+)")
_APX_STATEMENT: Final = re.compile(
    r"\s*(?:(arg)\s*\(\s*([^\s(),.%#]+)\s*\)|(att)\s*\(\s*([^\s(),.%#]+)\s*,\s*([^\s(),.%#]+)\s*\))"
    r"\s*\.\s*"
)
_APX_NAME: Final = re.compile(r"[^\s(),.%#]+")


class ArgueFormatError(ValueError):
    """A framework file that cannot be read; the message is `FILE:LINE: reason`."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


def read_i23(text: str, path: str = "<input>") -> Framework:
    """ICCMA 2023: a `p af N` header, then `a b` attack lines over 1..N; `#` starts a comment."""
    count: int | None = None
    header_line = 0
    attacks: list[tuple[int, int]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if count is None:
            match = _HEADER.fullmatch(line)
            if match is None:
                raise ArgueFormatError(path, number, f"expected the header `p af N`, got {line!r}")
            count, header_line = int(match.group(1)), number
            continue
        parts = line.split()
        if parts[0] == "p":
            raise ArgueFormatError(
                path, number, f"second header (the first is on line {header_line})"
            )
        if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
            raise ArgueFormatError(
                path, number, f"expected an attack `a b` of two numbers, got {line!r}"
            )
        a, b = int(parts[0]), int(parts[1])
        for value in (a, b):
            if not 1 <= value <= count:
                raise ArgueFormatError(path, number, f"argument {value} is outside 1..{count}")
        attacks.append((a - 1, b - 1))
    if count is None:
        raise ArgueFormatError(path, max(1, len(text.splitlines())), "no `p af N` header")
    return Framework.from_indices([str(i) for i in range(1, count + 1)], attacks)


def read_apx(text: str, path: str = "<input>") -> Framework:
    """apx: `arg(a).` and `att(a,b).` statements, any number per line; `%` or `#` comments.

    An attack naming an argument no `arg` statement declares is an error on the attack's line.
    """
    names: dict[str, int] = {}
    attacks: list[tuple[str, str, int]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"[%#]", raw, maxsplit=1)[0]
        position = 0
        while position < len(line):
            if not line[position:].strip():
                break
            match = _APX_STATEMENT.match(line, position)
            if match is None:
                rest = line[position:].strip()
                raise ArgueFormatError(
                    path, number, f"expected `arg(name).` or `att(name,name).`, got {rest!r}"
                )
            if match.group(1):
                names.setdefault(match.group(2), number)
            else:
                attacks.append((match.group(4), match.group(5), number))
            position = match.end()
    for attacker, attacked, number in attacks:
        for name in (attacker, attacked):
            if name not in names:
                raise ArgueFormatError(path, number, f"attack names undeclared argument {name!r}")
    try:
        return Framework.build(names, ((a, b) for a, b, _ in attacks))
    except FrameworkError as exc:  # not expected after the checks above
        raise ArgueFormatError(path, 1, str(exc)) from exc


def write_i23(framework: Framework) -> str:
    """ICCMA 2023 text: arguments numbered in argument order; other names noted as `#` lines."""
    lines = [f"p af {len(framework)}"]
    if list(framework.names) != [str(i) for i in range(1, len(framework) + 1)]:
        lines += [f"# {i} {name}" for i, name in enumerate(framework.names, start=1)]
    lines += [f"{a + 1} {b + 1}" for a, row in enumerate(framework.targets) for b in row]
    return "\n".join(lines) + "\n"


def write_apx(framework: Framework) -> str:
    """The apx text: one statement per line, arguments then attacks, each in argument order."""
    for name in framework.names:
        if not _APX_NAME.fullmatch(name):
            raise ValueError(f"argument name {name!r} cannot be written in apx")
    lines = [f"arg({name})." for name in framework.names]
    lines += [f"att({a},{b})." for a, b in framework.attack_pairs()]
    return "\n".join(lines) + "\n"


def detect_format(text: str, path: str = "") -> Format:
    """`i23` or `apx`: by the file extension (.i23, .af, .apx), else by the first statement."""
    lowered = path.lower()
    if lowered.endswith((".i23", ".af")):
        return "i23"
    if lowered.endswith(".apx"):
        return "apx"
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("%"):
            return "i23" if line.startswith("p ") else "apx"
    return "apx"


def read_framework(text: str, path: str = "<input>", fmt: str | None = None) -> Framework:
    """Read either format (`i23` or `apx`; detected when `fmt` is None)."""
    chosen = fmt or detect_format(text, path)
    if chosen not in FORMATS:
        raise ValueError(f"unknown format {chosen!r}: use one of {', '.join(FORMATS)}")
    return read_i23(text, path) if chosen == "i23" else read_apx(text, path)


def write_framework(framework: Framework, fmt: Format) -> str:
    """Write either format."""
    return write_i23(framework) if fmt == "i23" else write_apx(framework)
