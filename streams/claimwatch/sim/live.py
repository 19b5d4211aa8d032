"""`simulate --live`: a scenario's claims published in real time, its ground truth as it happens.

The scenario's clock is laid onto the wall clock: a moment `t` of the scenario happens at
`start + (t - scenario start) / speed`, and each claim's `observed_at` is that moment, so
the worker sees claims of now. Claim ids get the run's suffix (`-r<start in seconds,
base 36>`): a second run is new claims, not repeats. The incidents' starts and ends are
events of the same schedule, printed when they happen.

`--speed` compresses the scenario's time only: the policy's freshness, settle windows and
detector windows stay as they are, so an incident compressed below them (a replica 3
minutes late at speed 10 is 18 s late, inside a 60 s freshness) is not one any more. The
truth lines say what was injected, not what must be detected.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339

#: Claims due within this of each other are sent together (µs).
BATCH_US: Final = 20_000
_DIGITS: Final = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class Event:
    """One moment of a live run: claims to send, or an incident starting or ending."""

    at_us: int
    claims: tuple[dict[str, Any], ...] = ()
    truth: dict[str, Any] | None = None


def run_suffix(start_us: int) -> str:
    """`-r` and the run's start in whole seconds, base 36."""
    seconds, digits = start_us // 1_000_000, ""
    while True:
        seconds, rest = divmod(seconds, 36)
        digits = _DIGITS[rest] + digits
        if not seconds:
            return f"-r{digits}"


def schedule(
    claims: Sequence[Mapping[str, Any]],
    truth: Mapping[str, Any],
    start_us: int,
    speed: float,
) -> Iterator[Event]:
    """The run's events in time order: claims moved to the wall clock, incidents' edges.

    `claims` in `observed_at` order (as the simulator writes them); `start_us` is the wall
    time the scenario's start is laid on.
    """
    if speed <= 0:
        raise ValueError("speed must be positive")
    origin = parse_rfc3339(str(truth["start"]))
    suffix = run_suffix(start_us)

    def moved(at: int) -> int:
        return start_us + int((at - origin) / speed)

    edges: list[Event] = []
    for incident in truth.get("incidents", []):
        for edge in ("start", "end"):
            at = moved(parse_rfc3339(incident[edge]))
            text = {"event": f"incident {edge}s", **incident, "at": format_rfc3339(at)}
            text["start"] = format_rfc3339(moved(parse_rfc3339(incident["start"])))
            text["end"] = format_rfc3339(moved(parse_rfc3339(incident["end"])))
            edges.append(Event(at, truth=text))
    edges.sort(key=lambda e: e.at_us)
    batch: list[dict[str, Any]] = []
    batch_at = 0
    for claim in claims:
        at = moved(parse_rfc3339(str(claim["observed_at"])))
        while edges and edges[0].at_us <= at:
            if batch:
                yield Event(batch_at, tuple(batch))
                batch = []
            yield edges.pop(0)
        if batch and at - batch_at > BATCH_US:
            yield Event(batch_at, tuple(batch))
            batch = []
        if not batch:
            batch_at = at
        live = dict(claim)
        live["claim_id"] = f"{claim['claim_id']}{suffix}"
        live["observed_at"] = format_rfc3339(at)
        batch.append(live)
    if batch:
        yield Event(batch_at, tuple(batch))
    yield from edges


def truth_line(event: Mapping[str, Any], as_json: bool) -> str:
    """How a truth event is printed: one JSON object, or a sentence."""
    if as_json:
        return json.dumps(event, sort_keys=True)
    what = event.get("field") or event.get("source") or ""
    until = f" (until {event['end']})" if event["event"] == "incident starts" else ""
    return f"truth {event['at']}: {event['kind']} {what} {event['event'].split()[1]}{until}"


async def run_live(
    events: Iterator[Event],
    send: Callable[[Sequence[dict[str, Any]]], Awaitable[None]],
    say: Callable[[str], None],
    as_json: bool = False,
    clock: Callable[[], int] = lambda: time.time_ns() // 1000,
) -> int:
    """Send each event's claims at its time, `say` its truth line; returns the claims sent."""
    sent = 0
    for event in events:
        wait = (event.at_us - clock()) / 1e6
        if wait > 0:
            await asyncio.sleep(wait)
        if event.truth is not None:
            say(truth_line(event.truth, as_json))
        if event.claims:
            await send(event.claims)
            sent += len(event.claims)
    return sent
