"""The platform's django-oauth-toolkit policy hooks: which scopes exist and may be granted, and where a machine
client's token may be used.

``PlatformScopes`` (``SCOPES_BACKEND_CLASS``): the platform's scopes plus those the tenant's tools and servers
require; a client whose admin granted it a list (``allowed_scopes``) gets at most that list.
``PlatformOAuth2Validator`` (``OAUTH2_VALIDATOR_CLASS``): a client-credentials token is for an endpoint of the tenant
its client is bound to (its default server's when the request names none, RFC 8707), any other resource is
``invalid_target``; a machine client asking
for more scopes than it was allowed gets the allowed part. Token exchange (``token_exchange``) is open to the
clients an admin allowed it (``TenantApplication.may_exchange_tokens``). A code or refresh token is honoured only for an
active person who is still a member of a servable tenant, its row locked while it is validated (the token
endpoint runs in one transaction), and a replayed code revokes what it gave (``codes``).
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from oauth2_provider.models import get_grant_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import SettingsScopes, get_scopes_backend
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from mcp_infra.addresses import base_url_from_headers, endpoint_url, tenant_slug_of
from mcp_platform.oauth.audience import resource_target
from mcp_platform.oauth.codes import authorization_code_consumed, authorization_code_replayed, checksum
from mcp_platform.oauth.token_exchange import GRANT_TYPE as TOKEN_EXCHANGE
from tenants.models import Tenant
from tenants.selectors import membership_get, server_scope_vocabulary, tenant_get_servable, tool_scope_vocabulary

# RFC 7636 §4.2: BASE64URL(SHA256(verifier)) without padding is 43 characters; anything else can never verify.
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")

# Where ``save_bearer_token`` leaves the access token it issued, for the code's consumption record.
ISSUED_ACCESS_TOKEN = "platform_issued_access_token"


def _requested_resources(request: Any) -> list[str]:
    resource = getattr(request, "resource", None)
    if isinstance(resource, str):
        return resource.split()
    return [r for r in resource or [] if isinstance(r, str)]


def _tenant_of(application: Any, request: Any) -> Tenant | None:
    """The tenant a grant is for: the client's own when it is bound to one, else the one the resource names."""
    if getattr(application, "tenant_id", None) is not None:
        tenant: Tenant = application.tenant
        return tenant
    resources = _requested_resources(request)
    # Which origin the resource names is the audience check's business, not the vocabulary's.
    slug = tenant_slug_of(resources[0]) if len(resources) == 1 else None
    return tenant_get_servable(slug=slug) if slug else None


def _still_entitled(user: AbstractBaseUser | None, resources: Any) -> bool:
    """Whether ``user`` may still be issued a token for ``resources``: an active account, still a member of the
    servable (not suspended) tenant whose one endpoint they name."""
    names = [r for r in resources or [] if isinstance(r, str)] if isinstance(resources, list) else []
    slug = tenant_slug_of(names[0]) if len(names) == 1 else None
    tenant = tenant_get_servable(slug=slug) if slug else None
    if tenant is None or user is None or not user.is_active:
        return False
    return membership_get(tenant=tenant, user=user) is not None  # type: ignore[arg-type]


def pkce_problem(challenge: str | None, method: str | None) -> str | None:
    """What is wrong with an authorization request's PKCE parameters, or None. Only S256 is offered (RFC 9700
    §2.1.1; a missing method means "plain", RFC 7636 §4.3), and its challenge must be a base64url SHA-256."""
    if method != "S256":
        return 'Use the "S256" code_challenge_method; "plain" is not accepted.'
    if not challenge or not S256_CHALLENGE.fullmatch(challenge):
        return "code_challenge must be the unpadded base64url SHA-256 of the code_verifier (43 characters)."
    return None


def _allowed(application: Any) -> list[str]:
    return (getattr(application, "allowed_scopes", "") or "").split()


class PlatformScopes(SettingsScopes):
    def get_all_scopes(self) -> dict[str, str]:
        """Every scope with its description for the consent page, tool and server scopes of all tenants included."""
        described = dict(oauth2_settings.SCOPES)
        for scope in sorted(tool_scope_vocabulary(tenant=None)):
            described.setdefault(scope, f"Use this workspace's tools that require “{scope}”")
        for scope in sorted(server_scope_vocabulary(tenant=None)):
            described.setdefault(scope, f"Use this workspace's servers that require “{scope}”")
        return described

    def get_available_scopes(
        self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        """Without a request (discovery documents): the platform's scopes. For a grant: those plus the tool and
        server scopes of its tenant, narrowed to the client's ``allowed_scopes`` when the admin set them."""
        available = list(oauth2_settings._SCOPES)
        if request is None:
            return available
        tenant = _tenant_of(application, request)
        if tenant is not None:
            own = tool_scope_vocabulary(tenant=tenant) | server_scope_vocabulary(tenant=tenant)
            available += sorted(own - set(available))
        allowed = _allowed(application)
        return [scope for scope in available if scope in allowed] if allowed else available

    def get_default_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list[str]:
        """What a request that names no scope gets: everything the admin allowed the client, else the defaults."""
        if _allowed(application):
            return self.get_available_scopes(application, request)
        defaults: list[str] = oauth2_settings._DEFAULT_SCOPES
        return defaults


class PlatformOAuth2Validator(OAuth2Validator):
    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        """DOT's check (the client's one grant type); token exchange, which no DOT grant type stands for, for the
        clients allowed it (confidential, bound to a tenant, with exchange targets)."""
        if grant_type == TOKEN_EXCHANGE:
            return bool(getattr(client, "may_exchange_tokens", False))
        allowed: bool = super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)
        return allowed

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        """DOT's check; for client credentials, a request for more than the admin allowed is narrowed to what
        was allowed (RFC 6749 §3.3: the granted scope is returned), and refused only when nothing is left."""
        if getattr(request, "grant_type", None) == "client_credentials":
            available = set(get_scopes_backend().get_available_scopes(application=client, request=request))
            granted = [scope for scope in scopes if scope in available]
            if not granted:
                return False
            request.scopes = granted
            return True
        allowed: bool = super().validate_scopes(client_id, scopes, client, request, *args, **kwargs)
        return allowed

    def _check_and_set_request_resource(self, request: Any) -> None:
        """DOT's RFC 8707 handling; a client-credentials token gets one endpoint of its tenant (of its default server
        or of an enabled named server) as its one audience: the one named, else the default server's.

        Raises ``CustomOAuth2Error`` (``invalid_target``) for any other resource, or when the client is bound
        to no servable tenant.
        """
        super()._check_and_set_request_resource(request)
        if request.grant_type != "client_credentials":
            return
        tenant_id = getattr(request.client, "tenant_id", None)
        tenant = tenant_get_servable(slug=request.client.tenant.slug) if tenant_id is not None else None
        if tenant is None:
            raise CustomOAuth2Error(
                error="invalid_target", description="This client is not bound to an active workspace."
            )
        base_url = base_url_from_headers(request.headers)
        audience = endpoint_url(base_url, tenant.slug)
        if request.resource:
            named = request.resource if isinstance(request.resource, list) else [request.resource]
            target = resource_target(named[0], base_url) if len(named) == 1 and isinstance(named[0], str) else None
            if target is None or target[0].pk != tenant.pk:
                raise CustomOAuth2Error(
                    error="invalid_target",
                    description=f"This client's tokens are for the endpoints of {tenant.slug} ({audience}) only.",
                )
        request.resource = request.resource or [audience]

    def save_authorization_code(self, client_id: str, code: Any, request: Any, *args: Any, **kwargs: Any) -> None:
        """DOT's grant, only for a well-formed S256 challenge: the consent form's hidden fields can be tampered
        with after the request was checked. Raises ``InvalidRequestError``."""
        problem = pkce_problem(request.code_challenge, request.code_challenge_method)
        if problem:
            raise InvalidRequestError(description=problem, request=request)
        super().save_authorization_code(client_id, code, request, *args, **kwargs)

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        """DOT's check, on the code's row locked until the exchange commits; a code this client already
        exchanged revokes the tokens it gave. Raises nothing: False is ``invalid_grant``."""
        grant = get_grant_model().objects.select_for_update().filter(code=code, application=client).first()
        if grant is None:
            authorization_code_replayed(code=code, application=client)
            return False
        if not _still_entitled(grant.user, grant.resource):
            return False
        valid: bool = super().validate_code(client_id, code, client, request, *args, **kwargs)
        return valid

    def save_bearer_token(self, token: dict[str, Any], request: Any, *args: Any, **kwargs: Any) -> None:
        super().save_bearer_token(token, request, *args, **kwargs)
        setattr(request, ISSUED_ACCESS_TOKEN, token.get("access_token"))

    def invalidate_authorization_code(self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any) -> None:
        """DOT deletes the code; it is remembered, with what it gave, for replays."""
        super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        authorization_code_consumed(
            code=code, application=request.client, access_token=getattr(request, ISSUED_ACCESS_TOKEN, None)
        )

    def validate_refresh_token(self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        """DOT's check (rotation, reuse detection) after locking the token's rows, so a concurrent use waits
        for this one and then counts as a replay; and only for a person still entitled to the endpoint."""
        locked = get_refresh_token_model().objects.select_for_update().filter(token_checksum=checksum(refresh_token))
        list(locked.values_list("pk", flat=True))
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        instance = request.refresh_token_instance
        return _still_entitled(instance.user, instance.resource)
