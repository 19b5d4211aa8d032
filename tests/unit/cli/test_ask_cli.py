"""`claimwatch ask` says clearly when it has nothing to ask or nobody to ask."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.cli import run_cli
from tests.support.kafka import free_port
from tests.unit.client.test_facts import stand_in


def _closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--wait", "soon"), "claimwatch: --wait must be a number of seconds, got 'soon'\n"),
        (("--wait", "-2"), "claimwatch: --wait must be between 0 and 30 seconds, got -2\n"),
        (
            ("--covering", " , "),
            "claimwatch: --covering lists no claim id (give one or more, comma-separated)\n",
        ),
    ],
)
def test_bad_options_exit_2_with_the_reason(options: tuple[str, ...], message: str) -> None:
    """A `--wait` or `--covering` that cannot be used is bad usage, before any request."""
    done = run_cli("ask", "invoice:INV-1", "payment_status", *options)
    assert (2, b"", message) == (done.returncode, done.stdout, done.stderr.decode())


def test_no_worker_exits_1_naming_the_url() -> None:
    """Nobody at the worker URL (from the environment): exit 1, one line, no traceback."""
    url = _closed_url()
    done = run_cli("ask", "s", "f", "--covering", "c1", env={"CLAIMWATCH_WORKER_URL": url})
    stderr = done.stderr.decode()
    assert (1, b"") == (done.returncode, done.stdout)
    assert stderr.startswith(f"claimwatch: no worker at {url} (")
    assert "Start one (`claimwatch worker --policy POLICY`)" in stderr
    assert 1 == len(stderr.splitlines())


@pytest.mark.parametrize(
    ("options", "env", "start"),
    [
        (
            ("--worker-url", "127.0.0.1:6066"),
            {},
            "--worker-url: worker URL '127.0.0.1:6066' has no",
        ),
        (
            (),
            {"CLAIMWATCH_WORKER_URL": "htp://w"},
            "CLAIMWATCH_WORKER_URL 'htp://w' has the scheme",
        ),
    ],
)
def test_a_malformed_worker_url_exits_2_saying_what_a_valid_one_is(
    options: tuple[str, ...], env: dict[str, str], start: str
) -> None:
    done = run_cli("ask", "s", "f", *options, env=env)
    stderr = done.stderr.decode()
    assert (2, True) == (done.returncode, stderr.startswith(f"claimwatch: {start}"))
    assert "a valid one looks like http://127.0.0.1:6066" in stderr


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        ("refused", "claimwatch: claim c2 of refused|f was dead-lettered: bad\n"),
        ("crowded", "claimwatch: the worker at {url} is busy: too many waiting requests\n"),
    ],
)
async def test_a_refused_claim_or_a_busy_worker_exits_1_at_once_with_the_reason(
    subject: str, message: str
) -> None:
    """422 and 429 are answers, not a wait run out: exit 1, one line naming the reason."""
    async with stand_in() as (url, _asked):
        started = time.monotonic()
        done = await asyncio.to_thread(
            run_cli, "ask", subject, "f", "--covering", "c2", "--wait", "30", "--worker-url", url
        )
        took = time.monotonic() - started
    expected = (1, b"", message.format(url=url.rstrip("/")))
    assert expected == (done.returncode, done.stdout, done.stderr.decode())
    assert took < 20
