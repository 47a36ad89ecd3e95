"""KIP-848 consumer groups (``group.protocol=consumer``): the group model and its records, the
ConsumerGroupHeartbeat operations, target assignment, regex subscriptions, classic members of consumer
groups and online migration between the protocols."""
