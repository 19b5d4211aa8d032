"""The trust check asking a worker as shipped, on the real broker, for the team's trust records."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from claimwatch.client.facts import FactPages
from claimwatch.gateway.governance.checks import Argument, CheckFailed
from claimwatch.gateway.governance.trust import TrustCheck

from tests.support.checks import (
    TRUST_DOMAIN,
    TRUST_POLICY,
    arguments_call,
    env,
    source_of,
    trust_claim,
)
from tests.support.kafka import Workers, ago, publish_claims, unique, write_policy

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka


async def test_the_trust_check_argues_the_workers_decisions(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    worker = await workers.launch(write_policy(tmp_path, TRUST_POLICY))
    trusted, untrusted, unknown = (unique(n) + ".example" for n in ("news", "mail", "never"))
    claims = [
        {**trust_claim("t-1", trusted, "security-team", "trusted"), "observed_at": ago(5)},
        {**trust_claim("u-1", untrusted, "security-team", "untrusted"), "observed_at": ago(5)},
    ]
    assert 2 == await publish_claims(kafka_bootstrap, worker.prefix, claims)
    async with FactPages(worker.url) as pages:  # both decided before the check asks
        for claim in claims:
            answer = await pages.ask(claim["subject"], "trust", [claim["claim_id"]], wait=30)
            assert answer.covered, f"{claim['subject']}: no decision in 30 s:\n{worker.log}"

    source, checks = source_of({"trust_domain": TRUST_DOMAIN})
    check = TrustCheck.from_config("trust_domain", checks["trust_domain"], source, env(worker.url))
    try:
        argued = {
            domain: await check.argue(
                arguments_call({"url": f"https://{domain.upper()}/page"}, tool="fetch_page")
            )
            for domain in (trusted, untrusted, unknown)
        }
        worker.kill(signal.SIGTERM)
        with pytest.raises(CheckFailed) as failed:
            await check.argue(arguments_call({"url": f"https://{trusted}/"}, tool="fetch_page"))
    finally:
        await check.aclose()

    assert ("trusted_domain", 0.8, "allow") == (
        argued[trusted].kind,
        argued[trusted].strength,
        argued[trusted].decision,
    )
    assert argued[trusted].claim.startswith(f"domain:{trusted} trust is trusted (decision dec_")
    assert argued[trusted].claim.endswith(", from security-team)")
    assert argued[untrusted].claim.startswith(
        f"domain:{untrusted} trust: resolved untrusted, not mapped (dec_"
    )
    assert (
        Argument(
            "trust_unknown",
            f"domain:{unknown} trust: no decision (no claim about it)",
            0.0,
            "allow",
        )
        == argued[unknown]
    )
    assert ("trust_unknown", 0.0, "allow") == (
        argued[untrusted].kind,
        argued[untrusted].strength,
        argued[untrusted].decision,
    )
    assert str(failed.value).startswith(f"no worker at {worker.url} (")
