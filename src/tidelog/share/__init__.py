"""Share partitions on the broker (KIP-932, Kafka's ``kafka.server.share``): the in-flight records of a
share group's partitions on their leader (:mod:`tidelog.share.partition`), the share sessions of their
consumers (:mod:`tidelog.share.session`) and the manager ShareFetch and ShareAcknowledge call
(:mod:`tidelog.share.manager`). Durable state goes through the share-state persister
(:mod:`tidelog.coordinator.share.persister`); logs are read through the replica manager."""
