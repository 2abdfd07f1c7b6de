"""What every layer counts and traces with: the Prometheus metrics defined once (``metrics``), the request path's
per-process tally and its fold (``tally``), and spans that cost nothing while tracing is off (``spans``). The
``/metrics`` view, the call hooks and the tracer's set-up are the telemetry app's (``mcp_platform.telemetry``)."""
