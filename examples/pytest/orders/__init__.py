"""A small order service: a producer publishes orders, a consumer group totals them per customer."""
