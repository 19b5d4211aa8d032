"""The docs' commands that need Kafka, run as written: `make run`, the agent script, the rest.

`make run` runs until stopped: it is started as the quickstart says, with the test's
broker, topic prefix and worker port given through the variables every client reads
(CLAIMWATCH_BOOTSTRAP, CLAIMWATCH_TOPIC_PREFIX, CLAIMWATCH_WORKER_URL), and the agent
script is run against the worker it started. The blocks marked `worker` run against a
worker started as the README starts it, with the same variables; where a command names
the defaults literally (the URL http://127.0.0.1:6066, a topic `claimwatch.<name>`), the
test's URL and prefix stand in for them, as they would for a user of another deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import doc_blocks
from tests.support.doc_blocks import README, REPO, Block
from tests.support.kafka import Workers, delete_topics, free_port, unique

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

DEMO_POLICY = REPO / "examples" / "demo-policy.yaml"
QUICKSTART = REPO / "docs" / "quickstart.md"
AGENT = [sys.executable, "examples/agent.py"]
#: The agent script's first line: billing-api (the system of record) outranks the replica.
AGENT_SAYS = "resolved paid proceed"
DEFAULT_URL = "http://127.0.0.1:6066"
#: A topic of the default deployment named in a command (`--diff-against claimwatch.decisions`).
DEFAULT_TOPIC = re.compile(
    r"(?<![\w.])claimwatch\.(?=(claims|decisions|resolutions|conflicts|alerts)\b)"
)
MAKE_RUN_READY_S = 240.0
BLOCK_TIMEOUT_S = 180.0
#: Blocks that start a deployment of their own (the MCP example): its topics and its app id's.
OWN_DEPLOYMENTS = ("mcp-demo.", "claimwatch-mcp-demo.")

#: `make run`'s process, its output and the environment it was given.
MakeRun = tuple[subprocess.Popen[str], "Output", dict[str, str]]

WORKER_BLOCKS = doc_blocks.runnable("worker", "python", *doc_blocks.SHELL_LANGS)


def _env(bootstrap: str, prefix: str, url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "CLAIMWATCH_BOOTSTRAP": bootstrap,
        "CLAIMWATCH_TOPIC_PREFIX": prefix,
        "CLAIMWATCH_WORKER_URL": url,
    }


def _as_deployed(script: str, prefix: str, url: str) -> str:
    """The script with the test deployment's URL and prefix where it names the defaults."""
    return DEFAULT_TOPIC.sub(prefix, script.replace(DEFAULT_URL, url))


def _argv(block: Block, script: str) -> list[str]:
    return [sys.executable, "-c", script] if block.lang == "python" else ["bash", "-c", script]


def _run_block(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one block in a session of its own; whatever it left running is stopped after it."""
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\n(killed after {BLOCK_TIMEOUT_S:.0f} s)"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # a background worker the block did not stop
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _until(page: Path) -> tuple[str, str]:
    """The quickstart's long-running command and the text that says it is up."""
    for block in doc_blocks.blocks(page):
        for command in block.commands() if block.lang in doc_blocks.SHELL_LANGS else ():
            directive = block.directive(command)
            if directive.kind == "until":
                return command, directive.text
    raise AssertionError(f"{page}: no command marked `until`")


class Output:
    """A process's merged output, read by a thread so that waiting for a line can time out."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, proc: subprocess.Popen[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if proc.poll() is not None and not self._thread.is_alive():
                break
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} within {timeout:.0f} s:\n{''.join(self.lines)}")


@pytest.fixture
def make_run(
    kafka_bootstrap: str,
) -> Iterator[tuple[subprocess.Popen[str], Output, dict[str, str]]]:
    """`make run` as the quickstart writes it, on the test's prefix and a free port."""
    command, _ = _until(QUICKSTART)
    prefix = unique("cwdocs") + "."
    env = _env(kafka_bootstrap, prefix, f"http://127.0.0.1:{free_port()}")
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc, Output(proc), env
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as the quickstart says
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        asyncio.run(delete_topics(kafka_bootstrap, [prefix]))


def test_readme_and_quickstart_start_the_same_way() -> None:
    assert _until(QUICKSTART) == _until(README)


def test_make_run_then_the_agent_script_gets_its_decision(
    make_run: MakeRun,
) -> None:
    proc, output, env = make_run
    _, ready = _until(QUICKSTART)
    output.wait_for(ready, proc, MAKE_RUN_READY_S)
    agent = subprocess.run(
        AGENT, cwd=REPO, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S
    )
    assert 0 == agent.returncode, agent.stderr
    assert AGENT_SAYS == agent.stdout.splitlines()[0], agent.stdout
    assert None is proc.poll(), "".join(output.lines)


async def test_worker_blocks_run_as_written(workers: Workers) -> None:
    worker = await workers.launch(DEMO_POLICY)
    env = _env(workers.bootstrap, worker.prefix, worker.url)
    failures = []
    ran = []
    for block in WORKER_BLOCKS:
        script = _as_deployed(block.script(), worker.prefix, worker.url)
        done = await asyncio.to_thread(_run_block, _argv(block, script), env)
        ran.append(block.where)
        if done.returncode != 0:
            failures.append(f"{block.where} exit {done.returncode}:\n{done.stdout}\n{done.stderr}")
        elif block.directive().text not in done.stdout:
            failures.append(f"{block.where}: no {block.directive().text!r} in\n{done.stdout}")
    await delete_topics(workers.bootstrap, OWN_DEPLOYMENTS)
    assert [] == failures, "\n\n".join(failures)
    assert len(ran) >= 8, ran
