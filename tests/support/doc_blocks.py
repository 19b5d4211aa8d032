"""The code blocks of the README and docs/, and what the tests do with each of them.

A block is run as written, from the repository root, unless a marker comment right above
it says otherwise, one line per command (or `*` for the whole block):

    <!-- doctest
    *: worker                       run it against a live worker (integration test)
    *: worker "resolved"            ... and its output must hold that text
    make run: until "worker ready"  runs until stopped: pass once it prints the text
    make test: skip "why"           not run by the tests, for the reason given
    -->

Python blocks run with `python -c`; shell blocks (```sh, ```console) with bash, line by
line in one shell (`set -e`), so an `export` carries on to the next line. A
`--8<-- "path"` line (pymdownx.snippets) stands for that file's text, as on the site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
SHELL_LANGS = ("sh", "console")
#: What a marker may say about a command.
KINDS = ("run", "worker", "until", "skip")

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"<!-- doctest\n(.*?)\n-->\s*$", re.S)
_DIRECTIVE = re.compile(r'^(\*|[^:]+):\s*(worker|until|skip)\s*(?:"(.*)")?\s*$')
_SNIPPET = re.compile(r'^--8<--\s+"([^"]+)"\s*$')


@dataclass(frozen=True)
class Directive:
    """What to do with a command: its kind and its text.

    The text is what the output must show (worker, until) or why it is not run (skip).
    """

    kind: str = "run"
    text: str = ""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    path: Path
    line: int
    lang: str
    code: str
    directives: dict[str, Directive]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    def commands(self) -> list[str]:
        """A shell block's commands: continuation lines joined, comment lines left out."""
        lines: list[str] = []
        pending = ""
        for raw in self.code.splitlines():
            text = raw[2:] if self.lang == "console" and raw.startswith("$ ") else raw
            if self.lang == "console" and not raw.startswith("$ ") and not pending:
                continue  # a console block's output
            pending += text
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            if pending.strip() and not pending.lstrip().startswith("#"):
                lines.append(pending.strip())
            pending = ""
        return lines

    def directive(self, command: str = "*") -> Directive:
        """The marker's word on `command` (its own line first, then the block's `*`)."""
        for key, directive in self.directives.items():
            if key != "*" and command.startswith(key):
                return directive
        return self.directives.get("*", Directive())

    def script(self) -> str:
        """The code to run: snippets expanded (Python), or the commands in one shell."""
        if self.lang == "python":
            return "".join(_expand(line) for line in self.code.splitlines(keepends=True))
        return "set -e\n" + "\n".join(self.commands()) + "\n"


def _expand(line: str) -> str:
    match = _SNIPPET.match(line.strip())
    return (REPO / match.group(1)).read_text(encoding="utf-8") if match else line


def _directives(marker: str, where: str) -> dict[str, Directive]:
    found: dict[str, Directive] = {}
    for line in marker.splitlines():
        match = _DIRECTIVE.match(line.strip())
        if match is None:
            raise ValueError(f"{where}: doctest marker line not understood: {line!r}")
        key, kind, text = match.group(1).strip(), match.group(2), match.group(3) or ""
        if kind in ("until", "skip") and not text:  # a worker's text is optional
            raise ValueError(f"{where}: `{kind}` needs a quoted text: {line!r}")
        found[key] = Directive(kind, text)
    return found


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the marker above it, if any."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index] != "```":
            body.append(lines[index])
            index += 1
        index += 1
        before = "\n".join(lines[max(0, start - 12) : start])
        marker = _MARKER.search(before)
        where = f"{path.relative_to(REPO)}:{start + 1}"
        directives = _directives(marker.group(1), where) if marker else {}
        found.append(Block(path, start + 1, opening.group(1), "\n".join(body) + "\n", directives))
    return found


def pages() -> list[Path]:
    """The README and every hand-written page of docs/ (the generated ones are not files)."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def all_blocks(*langs: str) -> list[Block]:
    """The blocks of every page in one of `langs`."""
    return [b for page in pages() for b in blocks(page) if b.lang in langs]


def runnable(kind: str, *langs: str) -> list[Block]:
    """The blocks of `langs` whose every command is of `kind` (python: the block's `*`)."""
    chosen = []
    for block in all_blocks(*langs):
        if block.lang == "python":
            if block.directive().kind == kind:
                chosen.append(block)
        elif block.commands() and all(block.directive(c).kind == kind for c in block.commands()):
            chosen.append(block)
    return chosen
