"""Share groups (KIP-932, "queues for Kafka"): the group coordinator's ``share`` group type."""
