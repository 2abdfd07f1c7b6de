"""Observation of MCP calls: the seam (``calls``) that activity logging, metrics, tracing and rate limits hook into."""
