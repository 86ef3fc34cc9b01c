"""kombu's Redis transport, with one fix (a worker survives a Redis restart mid-job)
and one saving (a redis client per connection pool, not per command).

With Celery 5.7.0 and kombu 5.7.0, when the broker connection is lost while a
task is unacked, Celery's consumer first calls ``Connection.collect()``, which
closes the channel and then detaches the transport (``transport.client = None``),
and then ``Connection.close()``, which closes the channel again. The first close
stops early (draining the pending BRPOP raises ``ConnectionError``), so the
second one runs the rest: it restores the unacked message, which needs a new
connection pool, and ``Channel._connparams()`` dereferences the detached
``transport.client``: ``AttributeError: 'NoneType' object has no attribute
'hostname'``. Celery ignores only connection errors there, so the worker logs
"Unrecoverable error" and exits. The running task's ack on that channel fails
the same way.

A detached transport can no longer reach the broker: say so with the error
kombu and Celery expect, a ``redis.ConnectionError``. The close then counts as a
connection loss (ignored, and the consumer reconnects); the late ack is logged
("Couldn't ack") and the message, if Redis kept it, is redelivered after the
visibility timeout, where the lease and summary-version fence make it a no-op.

The saving: outside its event loop (every event a task publishes, every ack),
kombu's channel builds a new ``redis.Redis`` object for each command; building
one costs more CPU than the command it sends (a job publishes several events).
The client only wraps the channel's connection pool and is thread-safe, so the
channel keeps one per pool and builds a new one when the pool is replaced.

Registered by ``recap.worker.celery_app`` as the ``redis``/``rediss`` transport alias.
Remove once Celery/kombu fix the double close (tests/reliability/
test_infra_faults.py::test_worker_process_survives_redis_restart_mid_job keeps
guarding the behaviour).
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:  # transport detached by Connection.collect()
            raise redis.ConnectionError("broker connection closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)
        return params

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool = self.pool  # a new pool after a reconnect gets a new client
        client = self.__dict__.get("_recap_client")
        if client is None or client.connection_pool is not pool:
            client = self._recap_client = super()._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
