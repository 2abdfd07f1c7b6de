"""The MCP HTTP endpoint: ASGI middleware, the Channels consumer, legacy sessions and the SSE event store."""
