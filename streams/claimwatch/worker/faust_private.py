"""The one module that reaches into Faust's and aiokafka's private APIs; each use is named.

Every other module reaches Faust and aiokafka through their public APIs or through the
functions and base classes here. A unit test (tests/unit/worker/test_private_apis.py)
fails when a private attribute of theirs is used anywhere else in `claimwatch`.

The private uses, and why each is needed:

- `faust.streams._current_event` (a context variable): the event Faust's tables and
  transactions write on behalf of. `set_current_event` sets it for each event of a batch
  taken with `take_events`, which (unlike `stream.events()`) does not set it, so that a
  table write goes to the changelog partition of the record being handled.
- `aiokafka` consumer `_committed_offset` (through Faust's consumer): the last committed
  offset of a partition, for the consumer-lag gauge; Faust has no public reader of it.
- `faust` Producer `_ensure_producer()`: the aiokafka producer behind Faust's, and its
  `client.fetch_all_metadata()` (aiokafka's client, which it does not document): a
  metadata request is the broker probe of /health.
- `faust` consumer `_thread._ensure_consumer()._coordinator._group_instance_id`: dropped
  before a clean stop, so that a statically-member consumer sends LeaveGroup and the
  other workers take over its partitions at once (aiokafka has no setting for it).
- `mode` Service `_actors` of a Faust agent: its running actors, to report a stopped or
  crashed one on /health.
- `faust.Worker._schedule_shutdown(signal)`: where a stop signal lands; `StopSignalWorker`
  runs a public hook there (`on_stop_signal`) and lets the worker schedule its own stop.
- `AIOKafkaConsumerThread._create_worker_consumer` and the aiokafka consumer's
  `_fetch_max_wait_ms` / `_fetch_min_bytes`: Faust builds its consumer with a literal
  fetch wait and no fetch size, so `ConsumerThreadHooks` hands each consumer it makes to
  a public hook, and `set_fetch_limits` sets the two before the consumer starts.
- `faust...aiokafka.Consumer._new_consumer_thread`: which consumer thread class Faust's
  consumer runs; `ConsumerHooks.thread_class` names it.
- `faust.stores.rocksdb.Store` `_open_for_partition`, `_db_for_partition`, `_dbs` and
  `_key_index`: a partition's database as it opens (to turn its write-ahead log off),
  by partition (bulk writes of a catch-up), all open ones (to flush or drop them), and
  the key index to clear after a write Faust did not make. `RocksDBStoreHooks` gives
  them public names.
- `faust.transport.producer.ProducerBuffer._send_pending(fut)`: the coroutine the buffer
  task awaits for each buffered table write. A refusal by the producer (a record over
  `producer_max_request_size`) ends that task outside every agent, and mode then stops
  the app. It is replaced, on the class and at import of this module (the task binds
  the method when it starts), by one that hands a refusal to the handler of the buffer's
  app (`on_buffer_refusal`), and raises as Faust does for an app without one. It reads
  `ProducerBuffer.app` and the `FutureMessage` (`fut.message.channel`, `.key`, `.value`,
  `.partition`), and fails `fut` with the exception, marked retrieved, so whoever awaits
  it learns of the refusal.
"""

from __future__ import annotations

import asyncio
import signal
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, ClassVar

from faust import Worker
from faust.stores.rocksdb import Store as RocksDBStore
from faust.streams import _current_event
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer
from faust.transport.producer import ProducerBuffer

# ----------------------------------------------------------------------- streams and agents


def set_current_event(event: Any) -> None:
    """Make `event` the current event of this task (what Faust's tables write for)."""
    _current_event.set(weakref.ref(event))


def agent_actors(agent: Any) -> list[Any]:
    """The running actors of a Faust agent."""
    return list(agent._actors)


# ----------------------------------------------------------------------- consumer, producer


def committed_offset(consumer: Any, tp: Any) -> int | None:
    """The offset Faust's consumer last committed for `tp`, if any."""
    committed = consumer._committed_offset.get(tp)
    return None if committed is None else int(committed)


def kafka_producer(app: Any) -> Any:
    """The aiokafka producer behind the app's Faust producer (made when first asked)."""
    return app.producer._ensure_producer()


async def metadata_request(producer: Any) -> Any:
    """The whole cluster's metadata, asked through an aiokafka producer's client."""
    return await producer.client.fetch_all_metadata()


def leave_group_on_stop(app: Any) -> None:
    """Make the app's Kafka consumer send LeaveGroup when it stops (drop its instance id)."""
    try:
        coordinator = app.consumer._thread._ensure_consumer()._coordinator
    except Exception:  # no consumer yet: nothing to leave
        return
    coordinator._group_instance_id = None


def set_fetch_limits(consumer: Any, max_wait_ms: int, min_bytes: int) -> None:
    """Set an aiokafka consumer's fetch wait and size; read when it starts its fetcher."""
    consumer._fetch_max_wait_ms = max_wait_ms
    consumer._fetch_min_bytes = min_bytes


class ConsumerThreadHooks(AIOKafkaConsumerThread):
    """Faust's consumer thread, handing each worker consumer it makes to `worker_consumer_made`."""

    def worker_consumer_made(self, consumer: Any) -> None:
        """Called with each worker consumer before it starts; nothing by default."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        self.worker_consumer_made(consumer)
        return consumer


class ConsumerHooks(Consumer):
    """Faust's aiokafka consumer, over the consumer thread class `thread_class`."""

    thread_class: ClassVar[type[AIOKafkaConsumerThread]] = AIOKafkaConsumerThread

    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return self.thread_class(self, loop=self.loop, beacon=self.beacon)


# ----------------------------------------------------------------------------------- worker


class StopSignalWorker(Worker):
    """Faust's worker, running `on_stop_signal` when a stop signal schedules its shutdown."""

    def on_stop_signal(self, signum: signal.Signals) -> None:
        """Called when a stop signal arrives, before Faust schedules the stop."""

    def schedule_shutdown(self, signum: signal.Signals) -> None:
        """Stop the worker as the signal `signum` would."""
        self._schedule_shutdown(signum)

    def _schedule_shutdown(self, signal: signal.Signals) -> None:
        self.on_stop_signal(signal)
        super()._schedule_shutdown(signal)


# ------------------------------------------------------------------------------------ store


class RocksDBStoreHooks(RocksDBStore):
    """Faust's rocksdb store, with public names for its partition databases."""

    def opened(self, db: Any) -> Any:
        """Called with each partition database as it opens; returns the one to use."""
        return db

    def _open_for_partition(self, partition: int) -> Any:
        return self.opened(super()._open_for_partition(partition))

    def database(self, partition: int) -> Any:
        """A partition's database (opened on first use)."""
        return self._db_for_partition(partition)

    def open_databases(self) -> Iterator[Any]:
        """Every partition database open now."""
        return iter(list(self._dbs.values()))

    def drop_database(self, partition: int) -> Any | None:
        """Forget a partition's database (dropping the last reference closes it)."""
        return self._dbs.pop(partition, None)

    def drop_databases(self) -> None:
        """Forget every partition database."""
        self._dbs.clear()

    def forget_key_index(self) -> None:
        """Clear Faust's index of which partition holds a key (after writes of our own)."""
        self._key_index.clear()


# ------------------------------------------------------------------------- producer buffer

#: What a refusal is handed to: (topic, key, value, partition, exception).
RefusalHandler = Callable[[str, bytes | None, bytes | None, int | None, Exception], Awaitable[None]]

#: The refusal handler of each app that set one (weak: a test's apps come and go).
_REFUSAL_HANDLERS: weakref.WeakKeyDictionary[Any, RefusalHandler] = weakref.WeakKeyDictionary()
_ORIGINAL_SEND_PENDING = ProducerBuffer._send_pending


def on_buffer_refusal(app: Any, handler: RefusalHandler) -> None:
    """Hand what the app's producer buffer fails to send to `handler`, instead of crashing."""
    _REFUSAL_HANDLERS[app] = handler


def refusal_handler(app: Any) -> RefusalHandler | None:
    """The refusal handler an app set, if any."""
    try:
        return _REFUSAL_HANDLERS.get(app)
    except TypeError:  # None, or an object that cannot be weakly referenced
        return None


async def _guarded_send_pending(self: ProducerBuffer, fut: Any) -> None:
    """`ProducerBuffer._send_pending`, but a refusal goes to the app's handler, if it has one."""
    try:
        await _ORIGINAL_SEND_PENDING(self, fut)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        handler = refusal_handler(self.app)
        if handler is None:
            raise
        message = fut.message
        await handler(
            _topic_name(message.channel), message.key, message.value, message.partition, exc
        )
        if not fut.done():
            fut.set_exception(exc)
            fut.exception()  # retrieved: nobody else may ever await it


ProducerBuffer._send_pending = _guarded_send_pending  # type: ignore[method-assign]


def _topic_name(channel: Any) -> str:
    try:
        return str(channel.get_topic_name())
    except Exception:
        return "unknown"
