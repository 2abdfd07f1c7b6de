"""People's own credentials for what a tenant's tools call: OAuth connections to upstreams and personal API keys,
held sealed per (person, target), and who a call acts as (``acting``). The connect pages live in
``mcp_platform.oauth``; this package owns the rows, the OAuth client the platform is to upstreams, and the rules.
"""
