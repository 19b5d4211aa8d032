"""The trust check against a server speaking the worker's fact-page protocol, and `|host`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from claimwatch.client.mcp_adapter import MappingError, fill_subject, parse_mappings
from claimwatch.gateway.governance.checks import Argument, CheckFailed, run_checks
from claimwatch.gateway.governance.trust import TrustCheck
from claimwatch.policy.source import PolicyError

from tests.support.checks import (
    TRUST_DOMAIN,
    arguments_call,
    env,
    result_call,
    source_of,
    text_result,
    trust_claim,
    trust_decisions,
)
from tests.support.kafka import free_port

DECISIONS = trust_decisions(
    [
        trust_claim("c1", "example.org", "security-team", "trusted"),
        trust_claim("c2", "phish.example", "security-team", "suspicious"),
        trust_claim("c3", "mail.example.net", "security-team", "untrusted"),
        trust_claim("c4", "split.example", "security-team", "trusted"),
        trust_claim("c5", "split.example", "security-audit", "untrusted"),
        trust_claim("c6", "quiet.example", "security-team", None, status="unavailable"),
        trust_claim("c7", "odd.example", "security-team", "maybe"),
        trust_claim("c8", "gone.example", "security-team", None, status="not_found"),
    ]
)


@dataclass
class FactPage:
    """A worker's `GET /facts/{subject}/{field}`: the decisions it holds, or a set answer."""

    decisions: dict[str, dict[str, Any]]
    status: int | None = None  # answer every ask with this status instead
    delay_s: float = 0.0
    asked: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        subject, field_name = request.match_info["subject"], request.match_info["field"]
        self.asked.append((subject, field_name, dict(request.query)))
        await asyncio.sleep(self.delay_s)
        if self.status == 503:
            return web.json_response({"error": "recovering"}, status=503)
        if self.status == 429:
            error = "too many waiting requests: 64 waiting; ask again in 1 s"
            body = {"error": error, "reason": "crowded"}
            return web.json_response(body, status=429, headers={"Retry-After": "1"})
        decision = self.decisions.get(subject) if field_name == "trust" else None
        if decision is None:
            return web.json_response(
                {"error": f"no decision for {subject}|{field_name}"}, status=404
            )
        return web.json_response(decision)


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[FactPage, str]]:
    """A worker's fact page holding DECISIONS, and its URL (started on the test's loop)."""
    fact_page = FactPage(DECISIONS)
    app = web.Application()
    app.router.add_get("/facts/{subject}/{field}", fact_page.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield fact_page, str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def trust_check(url: str, **raw: Any) -> TrustCheck:
    source, checks = source_of({"trust_domain": {**TRUST_DOMAIN, **raw}})
    return TrustCheck.from_config("trust_domain", checks["trust_domain"], source, env(url))


def fetch(url: str) -> Any:
    return arguments_call({"url": url}, tool="fetch_page")


def short(domain: str) -> str:
    return DECISIONS[f"domain:{domain}"]["decision_id"][:12] + "…"


def unknown(claim: str) -> Argument:
    """The `otherwise` argument of TRUST_DOMAIN, with its claim."""
    return Argument("trust_unknown", claim, 0.0, "allow")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://Example.ORG/news",
            Argument(
                "trusted_domain",
                f"domain:example.org trust is trusted (decision {short('example.org')}, "
                "from security-team)",
                0.8,
                "allow",
            ),
        ),
        (
            "http://phish.example:8080/login",
            Argument(
                "suspicious_domain",
                f"domain:phish.example trust is suspicious (decision {short('phish.example')}, "
                "from security-team)",
                0.7,
                "deny",
            ),
        ),
        (
            "https://mail.example.net/inbox",
            unknown(
                "domain:mail.example.net trust: resolved untrusted, not mapped "
                f"({short('mail.example.net')})"
            ),
        ),
        (
            "https://new.example/",
            unknown("domain:new.example trust: no decision (no claim about it)"),
        ),
        (
            "https://split.example/",
            unknown(f"domain:split.example trust: conflict ({short('split.example')})"),
        ),
        (
            "https://quiet.example/",
            unknown(f"domain:quiet.example trust: insufficient ({short('quiet.example')})"),
        ),
        (
            "https://odd.example/",
            unknown(f"domain:odd.example trust: rejected ({short('odd.example')})"),
        ),
        (
            "https://gone.example/",  # a resolved absence has no value to map
            unknown(
                f"domain:gone.example trust: resolved absent, not mapped ({short('gone.example')})"
            ),
        ),
    ],
)
async def test_the_answer_table(url: str, expected: Argument) -> None:
    async with serving() as (fact_page, worker):
        check = trust_check(worker)
        try:
            assert expected == await check.argue(fetch(url))
        finally:
            await check.aclose()
        subject = expected.claim.split(" ")[0]
        assert [(subject, "trust", {"wait": "0.000"})] == fact_page.asked


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (503, "the worker at {url} is not ready: recovering"),
        (
            429,
            "the worker at {url} is busy: too many waiting requests: 64 waiting; ask again in 1 s",
        ),
    ],
)
async def test_a_worker_that_cannot_answer_fails_the_check(status: int, expected: str) -> None:
    async with serving() as (fact_page, worker):
        fact_page.status = status
        check = trust_check(worker)
        try:
            with pytest.raises(CheckFailed) as failed:
                await check.argue(fetch("https://example.org/"))
        finally:
            await check.aclose()
        assert expected.format(url=worker) == str(failed.value)


async def test_no_worker_listening_fails_the_check() -> None:
    worker = f"http://127.0.0.1:{free_port()}"
    check = trust_check(worker)
    try:
        with pytest.raises(CheckFailed) as failed:
            await check.argue(fetch("https://example.org/"))
    finally:
        await check.aclose()
    assert str(failed.value).startswith(f"no worker at {worker} (")


async def test_a_slow_worker_gets_no_answer_within_the_timeout() -> None:
    async with serving() as (fact_page, worker):
        fact_page.delay_s = 2.0
        check = trust_check(worker, timeout="300ms")
        try:
            outcomes = await run_checks([check], fetch("https://example.org/"), 2.0)
        finally:
            await check.aclose()
        assert [("trust_domain", None, "no answer within 300 ms")] == [
            (o.name, o.argument, o.error) for o in outcomes
        ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"link": "https://example.org"}, "no scalar `url` in arguments or result"),
        ({"url": "example.org"}, "`url`: 'example.org' is no URL with a host name"),
    ],
)
async def test_a_subject_that_cannot_be_filled_fails_the_check(
    arguments: dict[str, Any], expected: str
) -> None:
    async with serving() as (fact_page, worker):
        check = trust_check(worker)
        with pytest.raises(CheckFailed) as failed:
            await check.argue(arguments_call(arguments, tool="fetch_page"))
        await check.aclose()
        assert expected in str(failed.value)
        assert [] == fact_page.asked


async def test_the_result_fills_what_the_arguments_lack_and_arguments_come_first() -> None:
    async with serving() as (fact_page, worker):
        check = trust_check(worker)
        result = text_result("page", structured={"url": "https://example.org/a"})
        try:
            from_result = await check.argue(result_call(result, {"q": "news"}))
            from_arguments = await check.argue(result_call(result, {"url": "https://new.example/"}))
        finally:
            await check.aclose()
        assert "trusted_domain" == from_result.kind
        assert "trust_unknown" == from_arguments.kind
        assert ["domain:example.org", "domain:new.example"] == [s for s, _, _ in fact_page.asked]


async def test_one_session_serves_every_ask_and_aclose_closes_it() -> None:
    async with serving() as (_, worker):
        check = trust_check(worker)
        first = await check.pages()
        await asyncio.gather(*(check.argue(fetch("https://example.org/")) for _ in range(5)))
        assert first is await check.pages()
        await check.aclose()
        assert first._session is None
        await check.aclose()  # twice is harmless


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"otherwise": None},
            "gateway.yaml:3: governance.checks.trust_domain.otherwise: missing: say what a "
            "subject without a mapped decision argues, e.g. {decision: allow, kind: "
            "trust_unknown, strength: 0}",
        ),
        (
            {"subject": "domain:{url|domain}"},
            "gateway.yaml:5: governance.checks.trust_domain.subject: `{url|domain}`: unknown "
            "filter `|domain` (known: host)",
        ),
        (
            {"values": {"trusted": {"decision": "modify", "kind": "t", "strength": 1}}},
            "gateway.yaml:9: governance.checks.trust_domain.values.trusted.decision: Input "
            "should be 'allow' or 'deny'",
        ),
        (
            {"values": {"trusted": {"decision": "allow", "kind": "t", "strength": 2}}},
            "gateway.yaml:11: governance.checks.trust_domain.values.trusted.strength: Input "
            "should be less than or equal to 1",
        ),
    ],
)
def test_config_errors_name_the_line_and_key(raw: dict[str, Any], expected: str) -> None:
    config = {**TRUST_DOMAIN, **raw}
    config = {k: v for k, v in config.items() if v is not None}
    source, checks = source_of({"trust_domain": config})
    with pytest.raises(PolicyError) as refused:
        TrustCheck.from_config("trust_domain", checks["trust_domain"], source, env())
    assert expected == str(refused.value)


def test_a_worker_url_that_is_no_url_is_refused_at_start() -> None:
    source, checks = source_of({"trust_domain": TRUST_DOMAIN})
    with pytest.raises(PolicyError) as refused:
        TrustCheck.from_config(
            "trust_domain", checks["trust_domain"], source, env("localhost:6066")
        )
    assert str(refused.value).startswith(
        "gateway.yaml:3: governance.checks.trust_domain: worker URL 'localhost:6066' has no "
        "http:// or https:// scheme"
    )


# ------------------------------------------------------------------------------ fill_subject


@pytest.mark.parametrize(
    ("template", "arguments", "payload", "expected"),
    [
        ("invoice:{invoice_id}", {"invoice_id": "INV-1"}, {}, "invoice:INV-1"),
        ("invoice:{invoice_id}", {}, {"invoice_id": 7}, "invoice:7"),
        ("invoice:{id}", {"id": "A"}, {"id": "B"}, "invoice:A"),
        (
            "domain:{url|host}",
            {"url": "https://Mail.Example.NET:8443/x?q=1"},
            {},
            "domain:mail.example.net",
        ),
        ("domain:{url|host}", {"url": "http://user:pw@[::1]:80/"}, {}, "domain:::1"),
        ("{a|host}/{b}", {"a": "https://a.example", "b": "x"}, {}, "a.example/x"),
    ],
)
def test_fill_subject(
    template: str, arguments: dict[str, Any], payload: dict[str, Any], expected: str
) -> None:
    assert expected == fill_subject(template, arguments, payload)


@pytest.mark.parametrize(
    ("template", "arguments", "expected"),
    [
        ("domain:{url|host}", {"url": "example.org"}, "`url`: 'example.org' is no URL with a host"),
        ("domain:{url|host}", {"url": "mailto:a@example.org"}, "is no URL with a host name"),
        ("domain:{url|host}", {"url": "http://[::1"}, "is no URL with a host name"),
        ("domain:{url|host}", {"url": None}, "no scalar `url` in arguments or result"),
        ("domain:{url|tld}", {"url": "https://a.example"}, "unknown filter `|tld` (known: host)"),
    ],
)
def test_fill_subject_refuses(template: str, arguments: dict[str, Any], expected: str) -> None:
    with pytest.raises(MappingError) as refused:
        fill_subject(template, arguments, {})
    assert expected in str(refused.value)


def test_a_mapping_with_an_unknown_filter_is_refused() -> None:
    text = (
        "tools:\n  fetch:\n    subject: 'site:{url|hots}'\n"
        "    field: f\n    value: v\n    source: s\n"
    )
    with pytest.raises(MappingError) as refused:
        parse_mappings(text, "mappings.yaml")
    assert (
        "mappings.yaml:3: tools.fetch.subject: `{url|hots}`: unknown filter `|hots` (known: host)"
        == str(refused.value)
    )
