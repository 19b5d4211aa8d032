"""What becomes of a phase's signals: sent, queued while the broker is away, dropped, none."""

from __future__ import annotations

import asyncio

import orjson
from claimwatch.gateway.governance.record import VerdictRecorder
from claimwatch.gateway.outbox import Outbox
from claimwatch.models.verdict import VerdictSignal

from tests.support.governance import FakePublisher


def signal(check: str, request: str = "gw-1-result") -> VerdictSignal:
    return VerdictSignal.model_validate(
        {
            "request_id": request,
            "request_type": "web_content",
            "check": check,
            "kind": "k",
            "claim": "c",
            "strength": 0.5,
            "decision": "allow",
            "observed_at": "2026-12-05T22:31:07.120311Z",
            "tool": "fetch_page",
            "phase": "result",
        }
    )


async def test_signals_are_sent_keyed_by_request_with_their_extras() -> None:
    broker = FakePublisher()
    recorder = VerdictRecorder(lambda: broker, timeout_s=1.0)  # type: ignore[arg-type,return-value]
    assert "sent" == await recorder.record([signal("a"), signal("b")])
    assert [b"gw-1-result"] * 2 == [k for k, _ in broker.sent]
    assert ["a", "b"] == [orjson.loads(v)["check"] for _, v in broker.sent]
    assert {"tool": "fetch_page", "phase": "result"}.items() <= orjson.loads(
        broker.sent[0][1]
    ).items()
    await recorder.aclose()


async def test_no_argued_check_records_nothing() -> None:
    broker = FakePublisher()
    recorder = VerdictRecorder(lambda: broker, timeout_s=1.0)  # type: ignore[arg-type,return-value]
    assert "none" == await recorder.record([])
    assert [] == broker.sent


async def test_a_broker_that_is_away_gets_the_signals_once_it_answers() -> None:
    broker = FakePublisher()
    broker.down = True
    recorder = VerdictRecorder(lambda: broker, timeout_s=0.2)  # type: ignore[arg-type,return-value]
    assert "queued" == await recorder.record([signal("a")])
    assert "queued" == await recorder.record([signal("b", "gw-2-result")])  # kept in order
    broker.down = False
    for _ in range(50):
        if not len(recorder.outbox):
            break
        await asyncio.sleep(0.1)
    assert [b"gw-1-result", b"gw-2-result"] == [k for k, _ in broker.sent]
    await recorder.aclose()


async def test_a_full_outbox_drops_the_signals() -> None:
    broker = FakePublisher()
    broker.down = True
    recorder = VerdictRecorder(lambda: broker, timeout_s=0.2, outbox=Outbox(1))  # type: ignore[arg-type,return-value]
    assert "dropped" == await recorder.record([signal("a"), signal("b")])
    assert (1, 1) == (len(recorder.outbox), recorder.outbox.dropped)
    await recorder.aclose()
