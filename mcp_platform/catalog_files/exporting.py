"""A tenant written as a configuration file: the same bytes for the same tenant (sections in a fixed order, their
objects sorted by key, fields in each section's order, values left at their defaults left out, no anchors), so an
export applied to an empty tenant exports again as the same file. Secrets are named, never read."""

from __future__ import annotations

from typing import Any

import yaml
from django.conf import settings as django_settings

from mcp_platform.catalog_files.schema import SCHEMA_STATIC_PATH
from mcp_platform.catalog_files.sections import SECTIONS, SETTINGS_FIELDS
from mcp_platform.catalog_files.state import state_of_tenant
from tenants.models import Tenant

VERSION = 1
LINE_WIDTH = 110


class _Dumper(yaml.SafeDumper):
    """Block style, text with line breaks as literal blocks, and every repeated value written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted style where a literal block cannot hold the text exactly (trailing spaces).
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def schema_url(base_url: str) -> str:
    """Where the platform at ``base_url`` serves the format's JSON Schema."""
    static = str(django_settings.STATIC_URL).strip("/")
    return f"{base_url.rstrip('/')}/{static}/{SCHEMA_STATIC_PATH}"


def tenant_export(tenant: Tenant, *, base_url: str | None = None) -> str:
    """The configuration file of ``tenant``. ``base_url``: the platform's public origin, for the line that points
    editors (YAML language server: VS Code, JetBrains, Neovim) at the schema; without it, no such line."""
    state = state_of_tenant(tenant)
    document: dict[str, Any] = {
        "version": VERSION,
        "tenant": tenant.slug,
        "settings": {name: state.settings[name] for name in SETTINGS_FIELDS},
    }
    for section in SECTIONS:
        entries = state.entries(section)
        document[section.name] = [section.written(entries[key].fields) for key in sorted(entries)]
    header = [f"# yaml-language-server: $schema={schema_url(base_url)}"] if base_url else []
    header += [
        f"# The configuration of the tenant {tenant.slug}: apply it with `manage.py tenant_apply` or on the",
        "# tenant's admin page (Configuration). Secrets are named, never included. The objects an apply made are",
        "# removed when the file no longer lists them; everything else of the tenant is left alone.",
    ]
    body = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=LINE_WIDTH
    )
    return "\n".join(header) + "\n" + body
