"""A schema registry with Confluent's REST API, its state in the compacted internal topic ``_schemas``
(docs/schema-registry.md). The HTTP routes are :mod:`tidelog.web.schema_registry`."""
