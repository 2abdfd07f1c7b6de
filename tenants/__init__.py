"""Tenants: who hosts an MCP server here, who may manage it, and the catalog each one serves."""
