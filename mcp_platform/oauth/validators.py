"""The platform's django-oauth-toolkit policy hooks: which scopes exist and may be granted, and where a machine
client's token may be used.

``PlatformScopes`` (``SCOPES_BACKEND_CLASS``): the platform's scopes plus those the tenant's tools require; a
client whose admin granted it a list (``allowed_scopes``) gets at most that list. ``PlatformOAuth2Validator``
(``OAUTH2_VALIDATOR_CLASS``): a client-credentials token is for the endpoint of the tenant its client is bound
to, named or not in the request (RFC 8707), any other resource is ``invalid_target``; a machine client asking
for more scopes than it was allowed gets the allowed part.
"""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import SettingsScopes, get_scopes_backend
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from mcp_platform.oauth.resource import base_url_from_headers, endpoint_url, tenant_slug_of
from tenants.models import Tenant
from tenants.selectors import tenant_get_servable, tool_scope_vocabulary


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


def _allowed(application: Any) -> list[str]:
    return (getattr(application, "allowed_scopes", "") or "").split()


class PlatformScopes(SettingsScopes):
    def get_all_scopes(self) -> dict[str, str]:
        """Every scope with its description for the consent page, tool scopes of all tenants included."""
        described = dict(oauth2_settings.SCOPES)
        for scope in sorted(tool_scope_vocabulary(tenant=None)):
            described.setdefault(scope, f"Use this workspace's tools that require “{scope}”")
        return described

    def get_available_scopes(
        self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        """Without a request (discovery documents): the platform's scopes. For a grant: those plus the tool
        scopes of its tenant, narrowed to the client's ``allowed_scopes`` when the admin set them."""
        available = list(oauth2_settings._SCOPES)
        if request is None:
            return available
        tenant = _tenant_of(application, request)
        if tenant is not None:
            available += sorted(tool_scope_vocabulary(tenant=tenant) - set(available))
        allowed = _allowed(application)
        return [scope for scope in available if scope in allowed] if allowed else available

    def get_default_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list[str]:
        """What a request that names no scope gets: everything the admin allowed the client, else the defaults."""
        if _allowed(application):
            return self.get_available_scopes(application, request)
        defaults: list[str] = oauth2_settings._DEFAULT_SCOPES
        return defaults


class PlatformOAuth2Validator(OAuth2Validator):
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
        """DOT's RFC 8707 handling; a client-credentials token gets its tenant's endpoint as its one audience.

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
        audience = endpoint_url(base_url_from_headers(request.headers), tenant.slug)
        if request.resource not in ([], [audience]):
            raise CustomOAuth2Error(
                error="invalid_target", description=f"This client's tokens are for {audience} only."
            )
        request.resource = [audience]
