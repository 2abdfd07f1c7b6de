"""OpenAPI import: an OpenAPI 3.0/3.1 document becomes HTTP tools in a tenant's catalog (see docs/sources.md)."""
