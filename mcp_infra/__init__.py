"""Infrastructure that knows no tenant, below the tenant domain and above the protocol (docs/architecture.md,
"Layers"): the settings object (``conf``), the public addresses of the platform and its endpoints (``addresses``),
the outbound door and its clients (``outbound``), telemetry primitives (``telemetry``), cross-process messaging
(``messaging``), leases, the PostgreSQL backend (``postgresql``) and the ASGI servers the platform runs under
(``serving``). Nothing here imports ``tenants`` or ``mcp_platform``; what it needs of them is registered at start-up.
"""
