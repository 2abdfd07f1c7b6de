"""The admin app with the platform's site as ``admin.site``: a module of its own because app configs load before
models, and the site needs them."""

from __future__ import annotations

from django.contrib.admin.apps import AdminConfig


class PlatformAdminConfig(AdminConfig):
    default_site = "tenants.admin.site.platform_site"
