"""Metrics (Prometheus, ``/metrics``), traces (OpenTelemetry, optional) and structured request logs."""
