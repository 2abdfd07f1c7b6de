"""The app config that registers the instance's Python tools when Django starts, as ``TenantsConfig`` does the
built-in ones."""

from __future__ import annotations

from django.apps import AppConfig


class PersonalPlatformConfig(AppConfig):
    name = "tests.upstreams.personal_platform"
    label = "personal_platform"
    verbose_name = "Personal upstream (tests)"

    def ready(self) -> None:
        from tests.upstreams.personal_platform import tools  # noqa: F401  (its decorators register the tools)
