"""The README and the pages of docs/: their offline code runs as written, their exceptions are few.

The blocks that need a live worker (marked `worker`) and `make run` are run by
tests/integration/test_documentation_kafka.py; see tests/support/doc_blocks.py for the markers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support import doc_blocks
from tests.support.doc_blocks import README, REPO, Block

#: The most blocks the docs may exempt from the tests (each with its reason).
MAX_SKIPPED = 7
TIMEOUT_S = 180.0

OFFLINE_PYTHON = doc_blocks.runnable("run", "python")
OFFLINE_SHELL = doc_blocks.runnable("run", *doc_blocks.SHELL_LANGS)


def _ids(blocks: list[Block]) -> list[str]:
    return [b.where for b in blocks]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.mark.parametrize("block", OFFLINE_PYTHON, ids=_ids(OFFLINE_PYTHON))
def test_offline_python_block_runs(block: Block) -> None:
    done = _run([sys.executable, "-c", block.script()])
    assert 0 == done.returncode, f"{block.where}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", OFFLINE_SHELL, ids=_ids(OFFLINE_SHELL))
def test_offline_shell_block_runs(block: Block) -> None:
    done = _run(["bash", "-c", block.script()])
    assert 0 == done.returncode, f"{block.where}:\n{done.stdout}\n{done.stderr}"


def test_every_runnable_command_is_run_by_a_test() -> None:
    """A shell block mixing kinds would fall between the unit and the integration tests."""
    mixed = []
    for block in doc_blocks.all_blocks(*doc_blocks.SHELL_LANGS):
        kinds = {block.directive(c).kind for c in block.commands()}
        if len(kinds - {"skip", "until"}) > 1 or (
            kinds & {"run", "worker"} and kinds & {"skip", "until"}
        ):
            mixed.append((block.where, sorted(kinds)))
    assert [] == mixed


def test_exceptions_are_few_and_say_why() -> None:
    """Every command no test runs is marked with its reason; one reason may cover a few."""
    skips = {
        (b.where, b.directive(c).text)
        for b in doc_blocks.all_blocks("python", *doc_blocks.SHELL_LANGS)
        for c in (b.commands() if b.lang != "python" else ["*"])
        if b.directive(c).kind == "skip"
    }
    reasons = {reason for _, reason in skips}
    assert len(reasons) <= MAX_SKIPPED, sorted(reasons)
    assert all(len(reason) >= 20 for reason in reasons), sorted(reasons)


def test_the_docs_run_code_at_all() -> None:
    """The collection itself: the offline blocks found are the ones the pages hold."""
    assert len(OFFLINE_PYTHON) >= 2
    assert len(OFFLINE_SHELL) >= 3


def test_readme_example_is_the_agent_script() -> None:
    python = [b for b in doc_blocks.blocks(README) if b.lang == "python"]
    agent = (REPO / "examples" / "agent.py").read_text(encoding="utf-8")
    assert [agent] == [b.code for b in python]


def test_quickstart_shows_the_agent_script() -> None:
    quickstart = doc_blocks.blocks(REPO / "docs" / "quickstart.md")
    agent = (REPO / "examples" / "agent.py").read_text(encoding="utf-8")
    assert agent in [b.script() for b in quickstart if b.lang == "python"]


def test_readme_fits_on_a_screen() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    assert None is re.search(r"µs|p99|\d ×", text), "benchmark figures belong in the docs"


@pytest.mark.parametrize(
    "link", re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
)
def test_readme_links_resolve(link: str) -> None:
    assert (REPO / link).is_file(), link


def test_no_pointer_to_the_spec_in_the_code() -> None:
    """Code comments and messages point to the pages, which ship; the spec does not."""
    pattern = re.compile(r"SPEC (section|§|\d)")
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "streams").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert [] == found
