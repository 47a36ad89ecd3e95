"""Effective topic configuration: built-in defaults, server.properties, dynamic broker configs and a
topic's own overrides, in Kafka's order of precedence (the last wins).

* ``static_defaults``: the topic defaults ``server.properties`` implies (``log.retention.hours`` ...);
* dynamic broker configs (IncrementalAlterConfigs on the broker) whose key is a topic-default synonym
  (``log.retention.ms``, ``log.segment.bytes``, ``message.max.bytes`` ...) override those, for every
  topic at once;
* a topic's overrides (CreateTopics configs, AlterConfigs on the topic) override both.

Pure over the metadata image; the defaults derived from a given set of dynamic broker configs are
cached. Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tidelog.cluster.metadata import MetadataImage
from tidelog.config import BROKER_SYNONYMS, ConfigError, TopicConfig

log = logging.getLogger(__name__)


class TopicConfigs:
    def __init__(self, static_defaults: TopicConfig) -> None:
        self.static_defaults = static_defaults
        self._cached_for: Mapping[str, str] | None = None
        self._cached = static_defaults

    def defaults(self, image: MetadataImage) -> TopicConfig:
        """Topic defaults after the dynamic broker configs of ``image``."""
        broker_configs = image.broker_configs
        if broker_configs is not self._cached_for:
            self._cached = self.defaults_for(broker_configs)
            self._cached_for = broker_configs
        return self._cached

    def defaults_for(self, broker_configs: Mapping[str, str]) -> TopicConfig:
        dynamic = {BROKER_SYNONYMS[k]: v for k, v in broker_configs.items() if k in BROKER_SYNONYMS}
        try:
            return TopicConfig.from_dict(dynamic, self.static_defaults)
        except ConfigError as e:  # a stored value this version no longer accepts: keep the static defaults
            log.warning("ignoring dynamic broker topic defaults: %s", e)
            return self.static_defaults

    def for_topic(self, image: MetadataImage, topic: str) -> TopicConfig:
        """The effective configuration of ``topic`` (defaults only, if it does not exist)."""
        t = image.topics.get(topic)
        return TopicConfig.from_dict(t.configs if t else {}, self.defaults(image))


__all__ = ["TopicConfigs"]
