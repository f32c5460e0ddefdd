"""Celery's broker transport: kombu's Redis transport, made to survive a Redis restart.

kombu 5.7's Redis channel, when it is closed after its connection was lost while it held
unacknowledged tasks, puts them back on the queue through the connection pool it has just
dropped, and fails on `self.connection.client` being None (an AttributeError, not a connection
error). Celery calls that unrecoverable and the worker process exits: one Redis restart (a NAS
updating its Redis container) stopped every worker. Putting them back cannot work then and is
not needed: a Redis that restarted without persistence holds nothing to put back into, one that
kept its data hands unacknowledged tasks out again after the visibility timeout, a redelivered
answer is a no-op (its claim fails), and the web's watchdog sends the task of every answer
still waiting again (inference.services.sweeps).
"""

from __future__ import annotations

import logging

import redis
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client=None):
        try:
            return super().restore_unacked(client)
        except (AttributeError, redis.RedisError):
            log.warning(
                "the broker connection is gone; %d unacknowledged tasks are left to the watchdog", len(self._delivered)
            )
            self._delivered.clear()
            return []


class Channel(kombu_redis.Channel):
    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel
