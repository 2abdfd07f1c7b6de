"""The OAuth legs of a person's connection to a target: how the platform is known to the target's authorization
server (discovered, registered or entered by the admin), the authorization request with PKCE, the code exchange,
refreshes and revocation. The pages (``mcp_platform.oauth.connect``) call these; ``oauth_client`` speaks HTTP.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction

from tenants.connections import oauth_client, services
from tenants.connections.oauth_client import AuthServer, OAuthClientError, RefreshRefused, TokenSet
from tenants.connections.signals import connection_completed
from tenants.models import ConnectLink, OAuthClientRegistration, OpenApiSource, PersonalCredential, Tool, Upstream
from tenants.outbound_auth import PERSONAL_AUTH_TYPES
from tenants.secrets import SecretNotFound, SecretUnreadable, asecret_value, personal_seal, personal_unseal

CALLBACK_PATH = "/connect/callback/"
CLIENT_METADATA_PATH = "/connect/client-metadata.json"
CLIENT_NAME = "MCP platform"


class ConnectFailed(Exception):
    """The connection could not be made; the message is for the person (no token, no secret)."""


def redirect_uri(base_url: str) -> str:
    return base_url.rstrip("/") + CALLBACK_PATH


def client_metadata_url(base_url: str) -> str:
    return base_url.rstrip("/") + CLIENT_METADATA_PATH


def client_metadata(base_url: str) -> dict[str, Any]:
    """The platform's OAuth client ID metadata document: its ``client_id`` is the URL it is served at."""
    return {
        "client_id": client_metadata_url(base_url),
        "client_name": CLIENT_NAME,
        "client_uri": base_url.rstrip("/") + "/",
        "redirect_uris": [redirect_uri(base_url)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def target_auth(*, tenant_id: int, target: str) -> tuple[Tool | Upstream | OpenApiSource, dict[str, Any]] | None:
    """The tenant's item ``target`` names and its personal auth config; None where there is none (removed, or no
    longer personal)."""
    item = services.target_item(tenant_id=tenant_id, target=target)
    auth: Any = None
    if isinstance(item, Upstream):
        auth = item.auth
    elif isinstance(item, Tool):
        auth = (item.config or {}).get("auth") if isinstance(item.config, dict) else None
    elif isinstance(item, OpenApiSource):
        for config in Tool.objects.filter(tenant_id=tenant_id, openapi_source=item).values_list("config", flat=True):
            found = config.get("auth") if isinstance(config, dict) else None
            if isinstance(found, dict) and found.get("type") in PERSONAL_AUTH_TYPES:
                auth = found
                break
    if item is None or not isinstance(auth, dict) or auth.get("type") not in PERSONAL_AUTH_TYPES:
        return None
    return item, auth


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _resource_of(item: Tool | Upstream | OpenApiSource, auth: dict[str, Any]) -> str | None:
    # RFC 8707: an MCP upstream is a protected resource of its own; an HTTP API only where the admin named one.
    if isinstance(item, Upstream):
        return item.url
    resource = auth.get("resource")
    return resource if isinstance(resource, str) and resource else None


async def _client_secret(tenant_id: int, auth: dict[str, Any]) -> str | None:
    name = auth.get("secret")
    if not name:
        return None
    try:
        return await asecret_value(tenant_id=tenant_id, name=name)
    except (SecretNotFound, SecretUnreadable) as exc:
        raise ConnectFailed(f"the client secret this connection needs is missing: {exc}") from None


async def _discover(
    tenant_id: int, item: Tool | Upstream | OpenApiSource, auth: dict[str, Any]
) -> tuple[AuthServer, str]:
    """The authorization server (and the scope its resource asks for) of a target."""
    issuer = auth.get("issuer")
    if auth.get("authorization_endpoint") and auth.get("token_endpoint"):
        return (
            AuthServer(
                # Endpoints entered by hand may come without an issuer: the authorization endpoint's origin names it.
                issuer=str(issuer or _origin(auth["authorization_endpoint"])),
                authorization_endpoint=auth["authorization_endpoint"],
                token_endpoint=auth["token_endpoint"],
                registration_endpoint=None,
                revocation_endpoint=auth.get("revocation_endpoint"),
                scopes_supported=(),
                code_challenge_methods=("S256",),
                client_id_metadata_document_supported=False,
            ),
            "",
        )
    if issuer:
        return await oauth_client.discover_issuer(tenant_id=tenant_id, issuer=issuer), ""
    if isinstance(item, Upstream):
        server, scope = await oauth_client.discover_for_resource(tenant_id=tenant_id, resource_url=item.url)
        return server, scope or ""
    raise ConnectFailed("the admin named no authorization server for this API")


def _registration_get(tenant_id: int, target: str) -> OAuthClientRegistration | None:
    return OAuthClientRegistration.objects.filter(tenant_id=tenant_id, target=target).first()


def _registration_save(
    tenant_id: int, target: str, server: AuthServer, client_id: str, secret: str | None, scope: str, redirect: str
) -> OAuthClientRegistration:
    with transaction.atomic():
        OAuthClientRegistration.objects.filter(tenant_id=tenant_id, target=target).delete()
        row = OAuthClientRegistration(
            tenant_id=tenant_id, target=target, issuer=server.issuer, server=server.to_json(), client_id=client_id
        )
        row.scope = scope
        row.redirect_uri = redirect
        if secret:
            row.sealed_secret, row.key_id = personal_seal(secret, binding=("oauth-client", tenant_id, target))
        row.save()
    return row


async def registration(
    *, tenant_id: int, target: str, item: Tool | Upstream | OpenApiSource, auth: dict[str, Any], base_url: str
) -> tuple[OAuthClientRegistration, AuthServer]:
    """How the platform is known to the target's authorization server: discovered and registered once per
    (tenant, target), again when the admin names another issuer or client. Raises ``ConnectFailed``."""
    mode = auth.get("client") or "metadata_document"
    row = await sync_to_async(_registration_get)(tenant_id, target)
    if row is not None:
        server = AuthServer.from_json(row.server)
        same_issuer = not auth.get("issuer") or auth["issuer"] == row.issuer
        same_client = auth.get("client_id", row.client_id) == row.client_id if mode == "manual" else True
        # A client registered (or named by its metadata document) for another address of the platform has another
        # redirect URI: the authorization server would refuse to send the person back here.
        same_address = mode == "manual" or row.redirect_uri == redirect_uri(base_url)
        if same_issuer and same_client and same_address:
            return row, server
    try:
        server, scope = await _discover(tenant_id, item, auth)
        secret: str | None = None
        if mode == "manual":
            client_id = str(auth.get("client_id") or "")
            if not client_id:
                raise ConnectFailed("the admin entered no client ID for this connection")
        elif mode == "dynamic":
            if not server.registration_endpoint:
                raise ConnectFailed(f"{server.issuer} offers no dynamic client registration")
            registered = await oauth_client.register_client(
                tenant_id=tenant_id, server=server, redirect_uri=redirect_uri(base_url), client_name=CLIENT_NAME
            )
            client_id, secret = registered.client_id, registered.client_secret
        else:
            if not server.client_id_metadata_document_supported:
                raise ConnectFailed(f"{server.issuer} does not accept client ID metadata documents")
            client_id = client_metadata_url(base_url)
    except OAuthClientError as exc:
        raise ConnectFailed(str(exc)) from None
    row = await sync_to_async(_registration_save)(
        tenant_id, target, server, client_id, secret, scope, redirect_uri(base_url)
    )
    return row, server


async def _client_auth(tenant_id: int, row: OAuthClientRegistration, auth: dict[str, Any]) -> str | None:
    """The client secret to authenticate with at the token endpoint (None: a public client)."""
    if (auth.get("client") or "metadata_document") == "manual":
        return await _client_secret(tenant_id, auth)
    if row.sealed_secret:
        binding = ("oauth-client", row.tenant_id, row.target)
        return personal_unseal(row.sealed_secret, row.key_id, binding=binding, what="the registered client's secret")
    return None


async def _connecting(
    link: ConnectLink, base_url: str
) -> tuple[Tool | Upstream | OpenApiSource, dict[str, Any], OAuthClientRegistration, AuthServer]:
    """``link``'s target, its OAuth config, and how the platform is known to its authorization server. Raises
    ``ConnectFailed`` where the target no longer connects people's OAuth accounts."""
    found = await sync_to_async(target_auth)(tenant_id=link.tenant_id, target=link.target)
    if found is None or found[1]["type"] != "user_oauth":
        raise ConnectFailed("this item no longer connects people's accounts")
    item, auth = found
    row, server = await registration(
        tenant_id=link.tenant_id, target=link.target, item=item, auth=auth, base_url=base_url
    )
    return item, auth, row, server


async def begin(*, link: ConnectLink, base_url: str) -> str:
    """The authorization URL the person's browser goes to for ``link``'s target. Raises ``ConnectFailed``."""
    item, auth, row, server = await _connecting(link, base_url)
    verifier, challenge = oauth_client.new_pkce()
    state = await sync_to_async(services.connect_link_begin)(link=link, verifier=verifier)
    scope = auth.get("scope") or row.scope or None
    try:
        return oauth_client.authorization_url(
            server,
            client_id=row.client_id,
            redirect_uri=redirect_uri(base_url),
            state=state,
            code_challenge=challenge,
            scope=scope,
            resource=_resource_of(item, auth),
        )
    except OAuthClientError as exc:
        raise ConnectFailed(str(exc)) from None


def _completed(link: ConnectLink) -> None:
    transaction.on_commit(
        lambda: connection_completed.send_robust(
            sender=ConnectLink,
            tenant_id=link.tenant_id,
            user_id=link.user_id,
            elicitation_id=link.elicitation_id,
            target=link.target,
        )
    )


async def finish(*, state: str, code: str, user_id: int, base_url: str) -> ConnectLink:
    """Exchange the authorization ``code`` of the OAuth leg ``state`` for tokens and keep them for the person.
    Raises ``ConnectFailed`` (unknown, used or expired state; another person's; the upstream refused)."""
    finished = await sync_to_async(services.connect_link_finish)(state=state, user_id=user_id)
    if finished is None:
        raise ConnectFailed("this sign-in link was used already, has expired, or belongs to someone else")
    link, verifier = finished
    item, auth, row, server = await _connecting(link, base_url)
    try:
        tokens = await oauth_client.exchange_code(
            tenant_id=link.tenant_id,
            server=server,
            client_id=row.client_id,
            client_secret=await _client_auth(link.tenant_id, row, auth),
            code=code,
            redirect_uri=redirect_uri(base_url),
            code_verifier=verifier,
            resource=_resource_of(item, auth),
        )
    except OAuthClientError as exc:
        raise ConnectFailed(str(exc)) from None

    def store() -> None:
        with transaction.atomic():
            services.credential_store_oauth(
                tenant_id=link.tenant_id,
                user_id=link.user_id,
                target=link.target,
                access_token=tokens.access_token,
                refresh_token=tokens.refresh_token,
                expires_in=tokens.expires_in,
                scope=tokens.scope or "",
                issuer=server.issuer,
            )
            _completed(link)

    await sync_to_async(store)()
    return link


def key_stored(link: ConnectLink) -> None:
    """Tell the person's sessions that the key asked for through ``link`` is stored (after commit)."""
    _completed(link)


async def refresh_credential(credential: PersonalCredential, refresh_token: str) -> TokenSet:
    """``services.Refresher`` for OAuth connections. Raises ``RefreshRefused`` and ``CredentialUnusable``."""
    found = await sync_to_async(target_auth)(tenant_id=credential.tenant_id, target=credential.target)
    row = await sync_to_async(_registration_get)(credential.tenant_id, credential.target)
    if found is None or row is None:
        raise RefreshRefused("the item no longer connects people's accounts")
    item, auth = found
    server = AuthServer.from_json(row.server)
    try:
        return await oauth_client.refresh_tokens(
            tenant_id=credential.tenant_id,
            server=server,
            client_id=row.client_id,
            client_secret=await _client_auth(credential.tenant_id, row, auth),
            refresh_token=refresh_token,
            resource=_resource_of(item, auth),
        )
    except RefreshRefused:
        raise
    except (OAuthClientError, ConnectFailed) as exc:
        raise services.CredentialUnusable(f"could not refresh the connection: {exc}") from None


async def revoke(*, credential: PersonalCredential, values: dict[str, Any] | None) -> bool:
    """Revoke a removed OAuth connection's tokens at the upstream where it offers RFC 7009; whether it accepted."""
    if credential.kind != PersonalCredential.Kind.OAUTH or not values:
        return False
    found = await sync_to_async(target_auth)(tenant_id=credential.tenant_id, target=credential.target)
    row = await sync_to_async(_registration_get)(credential.tenant_id, credential.target)
    if row is None:
        return False
    server = AuthServer.from_json(row.server)
    if not server.revocation_endpoint:
        return False
    try:
        secret = await _client_auth(credential.tenant_id, row, found[1] if found else {})
    except ConnectFailed:
        secret = None
    return await oauth_client.revoke_token(
        tenant_id=credential.tenant_id,
        server=server,
        client_id=row.client_id,
        client_secret=secret,
        refresh_token=values.get("refresh_token"),
        access_token=values.get("access_token"),
    )


# What disconnecting did: a key removed; an OAuth connection removed and its tokens revoked at the upstream, or
# removed without the upstream confirming a revocation (it offers none, or did not answer).
KEY_REMOVED = "key_removed"
REVOKED = "revoked"
NOT_REVOKED = "not_revoked"


def disconnect(*, credential: PersonalCredential, by_user_id: int | None = None) -> str:
    """Remove ``credential`` (``by_user_id``: the admin who did, for the activity log) and revoke an OAuth
    connection's tokens at the upstream where it can: ``KEY_REMOVED``, ``REVOKED`` or ``NOT_REVOKED``."""
    values = services.credential_remove(credential=credential, by_user_id=by_user_id)
    if credential.kind != PersonalCredential.Kind.OAUTH:
        return KEY_REMOVED
    return REVOKED if async_to_sync(revoke)(credential=credential, values=values) else NOT_REVOKED
