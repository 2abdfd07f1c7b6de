"""Configuration as code: a tenant's catalog, sources, servers, rate limits and settings as one YAML file.

- ``loading``: the file read safely (size, aliases, duplicate keys, JSON values only), with the line of every value;
- ``schema``: the format's JSON Schema (``static/schemas/tenant-config-v1.schema.json``) and its check, by line;
- ``sections``: the table of the file's sections (key, fields, defaults, which rows each holds);
- ``selections``: a server's selection as the file writes it (sources by name, not by id);
- ``state``: a tenant and a file read into one comparable shape, and which objects a file manages (``models``);
- ``planning``: what applying a file would change (add, change, adopt, remove), checked as the admin checks;
- ``applying``: the plan carried out through the services in one transaction;
- ``exporting``: a tenant written as a file; ``pages``: export and import on the tenant's admin page;
- commands ``tenant_export`` and ``tenant_apply``.

It sits with the runtime apps (it reads and writes rate limits, ``mcp_platform.quotas``, which ``tenants`` must not
import); the tenant admin serves its pages through ``tenants.admin.pages.tenant_pages``.
"""
