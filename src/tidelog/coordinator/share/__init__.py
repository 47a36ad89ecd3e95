"""The share coordinator: the durable state of share-group partitions, kept in ``__share_group_state``
(KIP-932). :mod:`tidelog.coordinator.share.persister` is the contract the broker's share partitions and the
group coordinator use to reach it."""
