"""People's connections as the tests store them: a tool that takes each person's key, an upstream that acts as each
person (the platform registered at its authorization server), and a person's key or OAuth tokens stored for them."""

from __future__ import annotations

from typing import Any

from tenants.connections import services
from tenants.connections.oauth_client import AuthServer
from tenants.models import OAuthClientRegistration, PersonalCredential, Tenant, Tool, Upstream
from tests.factories import ToolFactory

KEY = "sk-person-key-0123456789"
ACCESS, REFRESH = "at-person-token-1", "rt-person-token-1"
ISSUER = "https://as.example"


def key_tool(tenant: Tenant, name: str = "weather") -> Tool:
    """An HTTP tool that sends each person's own key (its page asks for the "<Name> API key")."""
    auth = {"type": "user_key", "placement": "header", "name": "X-Key", "label": f"{name.capitalize()} API key"}
    return ToolFactory(tenant=tenant, name=name, backend="http", config={"url": "https://api.example/", "auth": auth})


def oauth_upstream(tenant: Tenant, name: str = "github", *, revocation: str | None = None) -> Upstream:
    """A disabled upstream acting as each person through OAuth, the platform registered (client ``c``) at an
    authorization server that revokes tokens at ``revocation`` (None: it offers no revocation)."""
    upstream = Upstream.objects.create(
        tenant=tenant, name=name, url=f"https://{name}.example/mcp", auth={"type": "user_oauth"}, enabled=False
    )
    server = AuthServer(
        issuer=ISSUER,
        authorization_endpoint=f"{ISSUER}/authorize",
        token_endpoint=f"{ISSUER}/token",
        revocation_endpoint=revocation,
    )
    OAuthClientRegistration.objects.create(
        tenant=tenant, target=f"upstream:{upstream.pk}", issuer=server.issuer, server=server.to_json(), client_id="c"
    )
    return upstream


def key_stored(tenant: Tenant, user: Any, tool: Tool) -> PersonalCredential:
    """``user``'s ``KEY`` for ``tool``."""
    return services.credential_store_key(tenant_id=tenant.pk, user_id=user.pk, target=f"tool:{tool.pk}", key=KEY)


def oauth_stored(tenant: Tenant, user: Any, upstream: Upstream, *, expires_in: float = 3600) -> PersonalCredential:
    """``user``'s tokens (``ACCESS``, ``REFRESH``, scope ``repo``) for ``upstream``, the access token expiring in
    ``expires_in`` seconds."""
    return services.credential_store_oauth(
        tenant_id=tenant.pk,
        user_id=user.pk,
        target=f"upstream:{upstream.pk}",
        access_token=ACCESS,
        refresh_token=REFRESH,
        expires_in=expires_in,
        scope="repo",
        issuer=ISSUER,
    )
