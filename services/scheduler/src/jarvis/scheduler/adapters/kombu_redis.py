"""kombu's Redis transport, with a broker outage kept a connection error all the way down.

When Redis goes away while a worker holds an unacknowledged message (`acks_late`, a run in
flight), Celery 5.7's consumer collects the broken connection (which clears the transport's
client) and then closes it. Closing the Redis channel restores the unacked message, which needs
a new Redis client, whose parameters come from that cleared client: kombu raises
AttributeError ('NoneType' object has no attribute 'hostname'). That is not one of the
transport's connection errors, so Celery treats it as unrecoverable and the worker exits; the
run's late ack on the old channel fails the same way.

Here that moment raises redis' ConnectionError instead: Celery ignores it while closing, logs it
for the late ack, and reconnects. The message stays in Redis's unacked set, from which kombu
restores it after the visibility timeout; the run executor makes that second delivery harmless.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed after an error; the worker reconnects")
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]  # kombu's stubs omit it


class Transport(kombu_redis.Transport):
    Channel = Channel
