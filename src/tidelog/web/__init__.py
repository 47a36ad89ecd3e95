"""The broker's HTTP side: one listener (``metrics.listener``) serving health checks, Prometheus
metrics and the web console with its JSON API."""
