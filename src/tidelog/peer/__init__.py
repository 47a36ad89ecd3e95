"""Tidelog as a Kafka client of Kafka brokers: one implementation of the wire conversation.

* :mod:`tidelog.peer.wire` (sans-IO): request framing, correlation ids, the SASL exchange, the
  transport's security settings; shared by every client below;
* :mod:`tidelog.peer.connection`: one asyncio connection to one broker (TLS, SASL, pipelined requests
  correlated by id, a timeout per request);
* :mod:`tidelog.peer.client`: the broker-to-broker client (Kafka's ``NetworkClient`` as the
  ``InterBrokerSendThread`` uses it): a connection per destination broker id, resolved from the
  cluster metadata, with reconnect backoff; ``await client.send(broker_id, request, version)``.

The blocking clients (the CLI's :mod:`tidelog.cli.broker_connection`, the tests'
:mod:`tidelog.testing.client`) use :mod:`tidelog.peer.wire` over a blocking socket.
"""
