"""The OAuth 2.1 client the platform is towards upstream authorization servers, for people's connections.

- ``servers``: discovery (RFC 9728 resource metadata, RFC 8414 and OpenID Connect server metadata), ``AuthServer``;
- ``grants``: dynamic registration (RFC 7591), PKCE and the authorization URL, code exchange, refresh, revocation
  (RFC 7009);
- ``wire``: the errors, one request through the outbound door (no redirect, 64 KiB, 10 s) and the checks of what an
  upstream answers.

Every function is async (but the two that build the authorization request) and takes the ``tenant_id`` whose outbound
policy applies. The rest of the house imports from here.
"""

from tenants.connections.oauth_client.grants import (
    RegisteredClient,
    TokenSet,
    authorization_url,
    exchange_code,
    new_pkce,
    refresh_tokens,
    register_client,
    revoke_token,
)
from tenants.connections.oauth_client.servers import AuthServer, discover_for_resource, discover_issuer
from tenants.connections.oauth_client.wire import RESPONSE_LIMIT, OAuthClientError, RefreshRefused

__all__ = [
    "RESPONSE_LIMIT",
    "AuthServer",
    "OAuthClientError",
    "RefreshRefused",
    "RegisteredClient",
    "TokenSet",
    "authorization_url",
    "discover_for_resource",
    "discover_issuer",
    "exchange_code",
    "new_pkce",
    "refresh_tokens",
    "register_client",
    "revoke_token",
]
