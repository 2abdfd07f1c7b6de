"""Upstream MCP servers re-published under a tenant.

- Calls: one connection per upstream (``connection``, the SDK ``Client``; ``lean``, the hot path of calls, reads
  and renders), the per-process pool and circuit breaker (``pool``), what an upstream asks of the client relayed
  both ways (``relay``), a proxied call run as the upstream's own task (``remote_tasks``), and the upstream backend
  with its plug (``backend``).
- The catalog: adding and refreshing upstreams and deciding their held changes (``services``), the mirror of an
  upstream's catalog into the tenant's (``mirror``) and its hold of a holding upstream's tools (``held``), the
  deployment's one watch on every enabled upstream's changes (``watch``), and the scheduled refresh on Celery
  (``tasks``).
"""
