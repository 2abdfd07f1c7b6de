"""System checks of the authorization server's deployment: one ID-token signing key for every process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Warning, register


@register()
def check_signing_key_is_shared(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """On the production path (Redis set, several processes) a key generated under one process's var/ differs
    from the next process's: ID tokens would verify only against some of the published keys."""
    generated = Path(settings.VAR_DIR) / "oidc_rsa_private_key.pem"
    key = settings.OAUTH2_PROVIDER.get("OIDC_RSA_PRIVATE_KEY", "")
    if settings.REDIS_URL and generated.exists() and generated.read_text() == key:
        return [
            Warning(
                "ID tokens are signed with a key generated for this process only.",
                hint="Set MCP_OIDC_RSA_PRIVATE_KEY (PEM) to the same key on every web process.",
                id="mcp_platform.oauth.W001",
            )
        ]
    return []
