"""Capture golden Kafka frames for tests/unit/protocol/test_golden.py (``python -m tools.capture_frames``).

Two kinds of golden bytes, written under ``--out`` (default ``tests/data/frames``):

* **Request frames from real clients.** A minimal fake single-node broker (asyncio, 127.0.0.1, port 0,
  answering with Tidelog's own codec) lets confluent-kafka and kafka-python produce (plain,
  idempotent, compressed), consume in a group (join, sync, fetch, heartbeat, commit, leave) and list
  topics. Each client runs twice against fresh brokers: one advertising current versions
  (``ADVERTISED``, client-compat.md 1.6) and one advertising what Kafka 2.3 did (``KAFKA_2_3``: no
  flexible versions, ApiVersions v0-2, so the clients also go through KIP-511's retry). Every request
  frame is recorded with the response frame sent back; the first distinct request bodies of each
  (client, API, version), up to a cap, are saved as ``<client>/<api>_request_v<N>_<n>.bin``: the
  frame without its 4-byte size prefix, i.e. request header + body. ``<client>`` is
  ``confluent-kafka`` or ``kafka-python``.
* **Response frames from independent encoders.** The response contents in ``RESPONSE_CASES`` are
  encoded by kio's entity writers and by kafka-python's protocol classes for a list of
  (API, version) pairs, and saved as ``kio/<api>_response_v<N>_<n>.bin`` and
  ``kafka-python/<api>_response_v<N>_<n>.bin``: response header (v0 or v1, as the encoder chose it;
  correlation id 7) + body, without the size prefix. Tidelog's encoder never writes a committed
  response, so the round-trip test is not circular.

Re-running replaces the .bin files it owns (README.md and other files are left alone). Record
timestamps, keys, partitions and ids handed out by the broker are fixed, but clients choose their own
batching and request order, so a re-run gives equivalent, not always byte-identical, request frames.
The response frames are reproducible.

Modules: :mod:`~tools.capture_frames.cluster` (the golden topic, ids and advertised versions),
:mod:`~tools.capture_frames.fake_broker`, :mod:`~tools.capture_frames.client` (driving the real clients
and choosing their request frames), :mod:`~tools.capture_frames.response_case` (the response contents),
:mod:`~tools.capture_frames.encoder` (kio and kafka-python writing them),
:mod:`~tools.capture_frames.frame_file` (the .bin files) and ``__main__`` (the command line).
"""
