"""The policy and claim mappings of the gateway's arbitration tests, and their worker.

Two regions of one billing system (`billing-api@us-east-1`, `billing-api@eu-west-1`) are
equally strong and independent: on `balance`, which nobody owns, they can conflict.
`payment_status` is owned by `billing-api` (the MCP example's shape): its owner decides
over a `reporting-replica`. The `signing` entry covers billing-api's instances
(`billing-api@...`) too, so their claims must be signed with `SECRET` from `KEY_ENV`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from tests.support.kafka import WorkerProcess, Workers, wait_for_ticks, write_policy

KEY_ENV: Final = "GATEWAY_TEST_BILLING_KEY"
SECRET: Final = "gateway-integration-secret-32-bytes"
POLICY: Final = f"""\
policy_version: gateway-test-1
defaults:
  settle: 1s
sources:
  billing-api@us-east-1: {{authority: system_of_record, lineage: ledger-us}}
  billing-api@eu-west-1: {{authority: system_of_record, lineage: ledger-eu}}
  billing-api:           {{authority: system_of_record, lineage: ledger}}
  reporting-replica:     {{authority: derived, lineage: reporting}}
fields:
  balance: {{type: enum, values: [paid, unpaid], freshness: 120s, consequential: true}}
  payment_status: {{type: enum, values: [paid, unpaid, overdue, refunded], freshness: 120s,
                   consequential: true, owner: billing-api}}
signing:
  billing-api: {{env: {KEY_ENV}}}
"""


def mapping(source: str, field: str, **extra: Any) -> dict[str, Any]:
    """A tool's claim mapping: the invoice of its `invoice_id` argument, its result's `status`."""
    return {
        "subject": "invoice:{invoice_id}",
        "field": field,
        "value": "status",
        "source": source,
        **extra,
    }


def signed(source: str, field: str, **extra: Any) -> dict[str, Any]:
    """`mapping`, its claims signed with the key in `KEY_ENV`."""
    return mapping(source, field, signing={"env": KEY_ENV}, **extra)


async def arbitrating_worker(workers: Workers, directory: Path) -> WorkerProcess:
    """A worker on `POLICY` (it reads the key from its environment), its clocks running."""
    worker = await workers.launch(write_policy(directory, POLICY), extra_env=((KEY_ENV, SECRET),))
    await wait_for_ticks(worker.bootstrap, worker.prefix)
    return worker
