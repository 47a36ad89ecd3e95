"""Client quota managers (Kafka's ``ClientQuotaManager`` / ``ClientRequestQuotaManager``): which quota
applies to a request's (user, client id), the sensor it is measured by, and the throttle time.

Precedence (Kafka's default quota callback), first match wins; a quota is *shared* by every client
the matched entity covers, so the sensor is keyed by the matched level's tags:

====  ====================================  ===========================
 #    quota entity (ZooKeeper path)          sensor (user tag, client tag)
====  ====================================  ===========================
 1    /config/users/<user>/clients/<client>  (user, client)
 2    /config/users/<user>/clients/<default> (user, client)
 3    /config/users/<user>                   (user, "")
 4    /config/users/<default>/clients/<client> (user, client)
 5    /config/users/<default>/clients/<default> (user, client)
 6    /config/users/<default>                (user, "")
 7    /config/clients/<client>               ("", client)
 8    /config/clients/<default>              ("", client)
====  ====================================  ===========================

The user is the principal's name (``User:alice`` -> ``alice``; ``ANONYMOUS`` on unauthenticated
listeners). Sensors idle for an hour are dropped, as Kafka expires them. Sans-IO: the caller passes
the time (the broker's injected clock). Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping

from tidelog.cluster.client_quota import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotas,
)
from tidelog.server.quota_sensor import QuotaSensor

#: Kafka drops a quota sensor after an hour without records.
INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000

Tags = tuple[str, str]


class ClientQuotaManager:
    """The quotas of one key (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``)."""

    def __init__(self, key: str, num_samples: int = 11, window_seconds: int = 1, *,
                 bounded_throttle: bool = False) -> None:
        self.key = key
        self.num_samples = num_samples
        self.window_ms = window_seconds * 1000
        #: Request-time quotas cap the throttle time at one window (ClientRequestQuotaManager).
        self.max_throttle_ms = self.window_ms if bounded_throttle else None
        #: (user, client) -> bound; user/client: a name, None (the default) or "" (not part of the entity)
        self._quotas: dict[tuple[str | None, str | None], float] = {}
        self._sensors: dict[Tags, QuotaSensor] = {}
        self._last_expiry_ms = 0

    # ------------------------------------------------------------------------------- quotas

    def update(self, quotas: ClientQuotas) -> None:
        """Take this key's quotas from the metadata's client quotas (all of them, after any change)."""
        mine: dict[tuple[str | None, str | None], float] = {}
        for entity, values in quotas.items():
            if self.key not in values:
                continue
            names = dict(entity)
            if USER not in names and CLIENT_ID not in names:
                continue
            mine[(names.get(USER, ""), names.get(CLIENT_ID, ""))] = values[self.key]
        self._quotas = mine

    @property
    def enabled(self) -> bool:
        return bool(self._quotas)

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """The sensor a request of (user, client id) is measured by (Kafka's precedence, above)."""
        q = self._quotas
        if ((user, client_id) in q or (user, None) in q):
            return user, client_id
        if (user, "") in q:
            return user, ""
        if (None, client_id) in q or (None, None) in q:
            return user, client_id
        if (None, "") in q:
            return user, ""
        return "", client_id

    def limit(self, tags: Tags) -> float | None:
        """The bound of the sensor with these tags, None when no quota applies."""
        user, client_id = tags
        q = self._quotas
        if user and client_id:
            chain = ((user, client_id), (user, None), (None, client_id), (None, None))
        elif user:
            chain = ((user, ""), (None, ""))
        elif client_id:
            chain = (("", client_id), ("", None))
        else:
            return None
        for key in chain:
            if key in q:
                return q[key]
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        return self.limit(self.metric_tags(user, client_id))

    # ------------------------------------------------------------------------------ sensors

    def _sensor(self, tags: Tags, now_ms: int) -> QuotaSensor:
        sensor = self._sensors.get(tags)
        if sensor is None:
            self._expire(now_ms)
            sensor = self._sensors[tags] = QuotaSensor(self.num_samples, self.window_ms)
            sensor.last_record_ms = now_ms
        return sensor

    def _expire(self, now_ms: int) -> None:
        if now_ms - self._last_expiry_ms < 60_000:
            return
        self._last_expiry_ms = now_ms
        for tags, sensor in list(self._sensors.items()):
            if now_ms - sensor.last_record_ms >= INACTIVE_SENSOR_EXPIRATION_MS:
                del self._sensors[tags]

    def record_and_get_throttle_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` for the request's quota; the throttle time if that puts it over (else 0)."""
        if not self._quotas:
            return 0
        tags = self.metric_tags(user, client_id)
        bound = self.limit(tags)
        if bound is None:
            return 0
        return self._sensor(tags, now_ms).record_and_throttle_ms(value, bound, now_ms, self.max_throttle_ms)

    def record_no_throttle(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Record without checking (and, negative, Kafka's ``unrecordQuotaSensor`` for a throttled fetch)."""
        if not self._quotas:
            return
        tags = self.metric_tags(user, client_id)
        if self.limit(tags) is not None:
            self._sensor(tags, now_ms).record(value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most that can be recorded at once without a certain throttle (Kafka caps a consumer's
        fetch size with it): the quota times ``(quota.window.num - 1) * quota.window.size.seconds``."""
        bound = self.quota(user, client_id)
        if bound is None:
            return None
        return bound * (self.num_samples - 1) * (self.window_ms / 1000)


class ClientQuotaManagers:
    """The three client quotas the broker enforces (Kafka's ``QuotaFactory.QuotaManagers``)."""

    def __init__(self, num_samples: int = 11, window_seconds: int = 1) -> None:
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, num_samples, window_seconds)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, num_samples, window_seconds)
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, num_samples, window_seconds, bounded_throttle=True)

    def update(self, quotas: Mapping) -> None:
        for manager in (self.produce, self.fetch, self.request):
            manager.update(quotas)


__all__ = ["INACTIVE_SENSOR_EXPIRATION_MS", "ClientQuotaManager", "ClientQuotaManagers"]
