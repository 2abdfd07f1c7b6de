"""Quotas and rate limits of tenants' MCP endpoints: the limits admins set, and the token buckets that hold them."""
