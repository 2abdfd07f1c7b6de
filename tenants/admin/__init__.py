"""The tenant-scoped admin, one module per area on a common base.

- ``site``: the platform's site (sign-in by membership, unscoped classes for platform staff only);
- ``policy``: who administers which tenant; ``scoping``: the base every admin class inherits, the only place that
  filters; ``audit``: what a save or delete changed, for the activity log and the admin's history; ``history``: the
  catalog history's pages on that base (versions, a version against the current row and its restore, recovery);
- ``fields``, ``schema``: form fields that keep what was typed, and the JSON Schema editor; ``secret_picker``: the
  select of a tenant's secret names that every form naming a secret offers, and its check at save;
- ``backend_forms``: the catalog forms' backend sections (each plug's fields for its config, and the rows widgets
  they share); ``tool_details``: a tool's annotations and icons as fields; ``prompt_details``: a prompt's arguments
  and messages as rows; ``resource_content``: a resource's file upload; ``uploads``: what an uploaded file must be;
- ``service_backed``: the base of admin classes whose writes go through the services;
- ``pages``: pages other apps add to an admin class (the console's pages on the tool admin, the configuration
  file's on the tenant admin);
- ``principals``: people by name wherever a page shows a principal (activity log, tool runs);
- the areas: ``members`` (tenants and their members; ``tenant_page`` is the tenant page's context), ``invitations``
  (inviting people by e-mail), ``catalog``
  (tools, resources, templates, prompts), ``secrets``, ``python_functions`` (the grants, and the function select of
  the catalog forms), ``openapi`` (OpenAPI sources and their import page), ``upstreams`` (upstream MCP servers),
  ``connections`` (members' own connections and keys, and disconnecting them).
  ``servers`` (the tenant's named servers and their selection editor).

Importing the package (Django's admin autodiscovery does) registers every area's admin classes on the platform's
site, once; no other app registers or replaces them.
"""

from tenants.admin import (  # noqa: F401
    catalog,
    connections,
    invitations,
    members,
    openapi,
    python_functions,
    secrets,
    servers,
    upstreams,
)
