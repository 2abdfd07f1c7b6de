"""Servers the tests run as processes of their own: upstream MCP servers (the SDK's, FastMCP) and their helpers."""

# How long a test server waits for open requests when stopped. Streams a test leaves open (an upstream's GET
# stream, a REST endpoint that never ends) would otherwise hold the stop until it turns into a kill.
GRACEFUL_SHUTDOWN_SECONDS = 1
