"""Pinned definitions: a source that holds changes (an upstream, an OpenAPI source's re-import) keeps serving the
approved definition of each tool and records what it proposes as a ``PendingChange`` for an admin to approve or reject.

- ``compatibility``: whether a new input schema still accepts the calls the approved one did (pure).
- ``definitions``: a definition's digest and the parts a person compares (pure).
- ``ledger``: the pending changes of one source as a refresh or import sees them (deduplicated, bounded), and reads
  for the review page.

Each source applies an approved change itself (``tenants.federation.services``, ``tenants.openapi.held``).
"""
