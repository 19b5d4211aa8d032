"""Worker settings: flags first, then CLAIMWATCH_* variables, then defaults."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from claimwatch.wire.kafka import DEFAULT_PREFIX, env_bootstrap, env_prefix
from claimwatch.worker.loop import DEFAULT_LOOP

#: The store the worker keeps its tables in unless told otherwise (`--store`).
DEFAULT_STORE: Final = "rocksdb://"
#: The app id (consumer group) of the default prefix; other prefixes derive theirs from it.
DEFAULT_APP_ID: Final = "claimwatch"


def default_app_id(prefix: str) -> str:
    """The app id (consumer group, local state, changelog names) of a deployment's prefix.

    One per prefix, so workers of two deployments on one broker never join one group. The
    default prefix's is `claimwatch`; any other prefix `p` gets `claimwatch-p`.
    """
    return DEFAULT_APP_ID if prefix == DEFAULT_PREFIX else f"{DEFAULT_APP_ID}-{prefix}"


#: Largest record the worker's producer sends (Faust's `producer_max_request_size`).
DEFAULT_PRODUCER_MAX_REQUEST_BYTES: Final = 1_000_000
#: Seconds a stop may take before the worker ends at once (`CLAIMWATCH_STOP_TIMEOUT_S`).
DEFAULT_STOP_TIMEOUT_S: Final = 30.0
#: Requests one worker lets wait for a decision at once, in all and per fact.
DEFAULT_MAX_WAITERS: Final = 1024
DEFAULT_MAX_WAITERS_PER_FACT: Final = 64


def env_bound(name: str, default: int, low: int, high: int) -> int:
    """A whole number from the environment variable `name` (else `default`), in low..high.

    Anything else ends the process with exit code 2 and a message naming the variable.
    """
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip()
    if len(text) <= 12 and text.isascii() and text.isdigit() and low <= int(text) <= high:
        return int(text)
    sys.stderr.write(f"claimwatch: {name}={raw[:40]!r}: give a whole number in {low}..{high}\n")
    raise SystemExit(2)


@dataclass(slots=True)
class WorkerSettings:
    """Everything a worker needs to start."""

    policy_path: Path
    bootstrap: str = field(default_factory=env_bootstrap)
    prefix: str = field(default_factory=env_prefix)
    partitions: int = 4
    web_port: int = 6066
    #: the host other workers and clients reach this one at (its fact pages are forwarded
    #: there), and the address its web server binds (default: the same)
    web_host: str = field(
        default_factory=lambda: os.environ.get("CLAIMWATCH_WEB_HOST") or "127.0.0.1"
    )
    web_bind: str | None = field(default_factory=lambda: os.environ.get("CLAIMWATCH_WEB_BIND"))
    #: the consumer group and local state name; None: `default_app_id` of the prefix
    app_id: str | None = None
    store: str = DEFAULT_STORE
    data_dir: Path = Path(".cache/worker")
    #: Faust's exactly_once stalls on our tick records (docs/concepts.md#delivery): at-least-once.
    guarantee: str = "at_least_once"
    tick_interval_s: float = 1.0
    lateness_s: float = 1.0
    commit_interval_s: float = 1.0
    log_level: str = field(
        default_factory=lambda: os.environ.get("CLAIMWATCH_LOG_LEVEL", "warning")
    )
    #: records an agent takes at once, and how long it waits to fill a batch: Faust's
    #: per-record consumer path (one ack and wake-up each) costs more than our step
    #: largest policy file accepted (see claimwatch.policy.loading.MAX_POLICY_BYTES)
    max_policy_bytes: int = 1024 * 1024
    #: standby copies of each table partition kept warm on other workers (Faust's
    #: table_standby_replicas): a moved partition is then restored from the changelog tail
    standby_replicas: int = 0
    #: /health answers 503 once the broker has not answered for this long
    health_broker_timeout_s: float = 30.0
    #: static group membership (KIP-345): a restarted worker with the same id takes its
    #: partitions back at once instead of waiting for its old session to time out.
    #: Default: host name and web port, stable across restarts and unique per host and port.
    instance_id: str | None = None
    #: a member that stops heartbeating is dropped after this long (Faust's default is 60 s)
    session_timeout_s: float = 10.0
    heartbeat_interval_s: float = 1.0
    batch_max: int = field(
        default_factory=lambda: int(os.environ.get("CLAIMWATCH_BATCH_MAX", "500"))
    )
    batch_within_s: float = field(
        default_factory=lambda: float(os.environ.get("CLAIMWATCH_BATCH_WITHIN_MS", "10")) / 1000
    )
    #: the full garbage collection runs every this many seconds, never in between (see
    #: claimwatch.worker.collector); 0 keeps Python's own collector policy
    gc_full_every_s: float = field(
        default_factory=lambda: float(os.environ.get("CLAIMWATCH_GC_FULL_EVERY_S", "300"))
    )
    #: versions a document keeps (the oldest beyond are dropped; their pages answer 410)
    doc_max_versions: int = field(
        default_factory=lambda: env_bound("CLAIMWATCH_DOC_MAX_VERSIONS", 100, 1, 100_000)
    )
    #: largest document body (bytes of its stored JSON form); a larger one is rejected
    doc_max_body_bytes: int = field(
        default_factory=lambda: env_bound(
            "CLAIMWATCH_DOC_MAX_BODY_BYTES", 256 * 1024, 1024, 512 * 1024
        )
    )
    #: signals one verdict request may hold; one more decides it undecided at once
    verdict_max_signals: int = field(
        default_factory=lambda: env_bound("CLAIMWATCH_VERDICT_MAX_SIGNALS", 16, 1, 32)
    )
    #: bytes the signals of one verdict request may take; beyond, decided undecided at once
    verdict_max_request_bytes: int = field(
        default_factory=lambda: env_bound(
            "CLAIMWATCH_VERDICT_MAX_REQUEST_BYTES", 256 * 1024, 1024, 512 * 1024
        )
    )
    #: largest record the producer sends (bytes, `CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES`):
    #: one larger is refused, dropped and reported (claimwatch.worker.producer_guard). Keep it
    #: at most the broker's `message.max.bytes`; every bound on stored values assumes the
    #: default
    producer_max_request_bytes: int = field(
        default_factory=lambda: env_bound(
            "CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES",
            DEFAULT_PRODUCER_MAX_REQUEST_BYTES,
            65_536,
            16 * 1024 * 1024,
        )
    )
    #: the event loop (claimwatch.worker.loop): uvloop, or asyncio (`CLAIMWATCH_LOOP`)
    loop: str = field(default_factory=lambda: os.environ.get("CLAIMWATCH_LOOP", DEFAULT_LOOP))
    #: a stop asked for (SIGTERM, SIGINT) that has not finished after this many seconds
    #: ends the process at once, exit 4 (a stop waits on the broker, which may be gone)
    stop_timeout_s: float = field(
        default_factory=lambda: float(
            os.environ.get("CLAIMWATCH_STOP_TIMEOUT_S", str(DEFAULT_STOP_TIMEOUT_S))
        )
    )
    #: the bearer token that `POST /agents/{name}/stop` requires (`CLAIMWATCH_ADMIN_TOKEN`);
    #: unset, the route is refused (see docs/operations.md). Never shown in a repr.
    admin_token: str | None = field(
        default_factory=lambda: os.environ.get("CLAIMWATCH_ADMIN_TOKEN") or None, repr=False
    )
    #: requests waiting for a covering decision (`?covering=&wait=`) this worker holds at
    #: once, in all and per fact; one more is answered 429 with Retry-After
    max_waiters: int = field(
        default_factory=lambda: int(
            os.environ.get("CLAIMWATCH_MAX_WAITERS", str(DEFAULT_MAX_WAITERS))
        )
    )
    max_waiters_per_fact: int = field(
        default_factory=lambda: int(
            os.environ.get("CLAIMWATCH_MAX_WAITERS_PER_FACT", str(DEFAULT_MAX_WAITERS_PER_FACT))
        )
    )

    @property
    def app(self) -> str:
        """The app id in use: the one given, else the prefix's (see `default_app_id`)."""
        return self.app_id if self.app_id is not None else default_app_id(self.prefix)
