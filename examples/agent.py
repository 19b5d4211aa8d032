"""An agent's tool results, decided: two sources disagree about one invoice.

Start a worker first (`make run`), then: .venv/bin/python examples/agent.py
The decision prints at once: the claims ask to be decided on arrival (`Client.decide`'s
default); `decide(claims, early=False)` waits for the policy's 2 s settle window instead.
"""

import asyncio
import uuid
from datetime import UTC, datetime

from claimwatch import Client


async def main() -> None:
    invoice = f"invoice:INV-{uuid.uuid4().hex[:8]}"  # a new fact on every run
    now = datetime.now(UTC).isoformat()  # fresh: the field's freshness budget is 60 s
    claims = [
        {"claim_id": str(uuid.uuid4()), "subject": invoice, "field": "payment_status",
         "source": "billing-api", "observed_at": now, "status": "ok", "value": "paid"},
        {"claim_id": str(uuid.uuid4()), "subject": invoice, "field": "payment_status",
         "source": "reporting-replica@eu-west-1", "observed_at": now, "status": "ok",
         "value": "overdue"},
    ]
    # the worker and broker: CLAIMWATCH_WORKER_URL, CLAIMWATCH_BOOTSTRAP and
    # CLAIMWATCH_TOPIC_PREFIX, else http://127.0.0.1:6066, 127.0.0.1:9092 and claimwatch.
    async with Client() as client:
        decisions = await client.decide(claims, timeout=30)
    decision = decisions[f"{invoice}|payment_status"]
    print(decision["outcome"], decision["value"], decision["action"])
    print(decision["reason"])
    for claim in decision["claims"]:
        print(f"  {claim['source']}: {claim['value']} -> {claim['disposition']}")


if __name__ == "__main__":
    asyncio.run(main())
