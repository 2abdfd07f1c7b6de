"""Discovery documents: RFC 9728 protected-resource metadata for each tenant endpoint, the RFC 8414
authorization-server metadata, and OpenID Connect discovery consistent with it, all on django-oauth-toolkit's
views."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.views import ConnectDiscoveryInfoView, OAuthProtectedResourceMetadataView, OAuthServerMetadataView

from mcp_infra.addresses import base_url_from_request, endpoint_url
from mcp_platform.oauth.scopes import SCOPES, ordered
from tenants.identity import server_identity
from tenants.models import Server, Tenant
from tenants.selectors import server_get_servable, tenant_get_servable, tool_scope_vocabulary


class TenantResourceMetadataView(OAuthProtectedResourceMetadataView):
    """``/.well-known/oauth-protected-resource/t/<tenant>/<endpoint>`` (``mcp``, ``sse``, ``messages``), and
    ``…/t/<tenant>/s/<server>/<endpoint>`` for one of the tenant's named servers: DOT's document with ``resource`` =
    that endpoint's URL (RFC 9728 §3.3) and ``scopes_supported`` = the platform's MCP scopes plus those the tenant's
    tools require (and, for a named server, those it requires of every request)."""

    tenant: Tenant
    server: Server | None

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        tenant = tenant_get_servable(slug=kwargs["tenant"])
        if tenant is None:
            raise Http404("No such tenant.")
        server_slug = kwargs.get("server", "")
        self.server = server_get_servable(tenant=tenant, slug=server_slug) if server_slug else None
        if server_slug and self.server is None:
            raise Http404("No such server.")
        self.tenant = tenant
        base_url = base_url_from_request(request)
        self.resource = endpoint_url(base_url, tenant.slug, kwargs["endpoint"], server_slug)
        return super().get(request, *args, **kwargs)

    def get_resource(self, request: HttpRequest) -> str:
        return self.resource

    def get_resource_name(self) -> str:
        if self.server is None:
            return self.tenant.name
        return str(server_identity(self.tenant, self.server).title)

    def get_scopes_supported(self) -> list[str]:
        own = self.server.required_scopes.split() if self.server is not None else []
        return ordered({*SCOPES, *tool_scope_vocabulary(tenant=self.tenant), *own})


# Introspection answers confidential clients only (``introspection``): not "none", whatever the token endpoint takes.
INTROSPECTION_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]


class AuthorizationServerMetadataView(OAuthServerMetadataView):
    """``/.well-known/oauth-authorization-server``: DOT's document, which lists each endpoint only where it is
    routed (``introspection_endpoint`` included), with the ways a client authenticates to introspection."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        document = json.loads(super().get(request, *args, **kwargs).content)
        if "introspection_endpoint" in document:
            document["introspection_endpoint_auth_methods_supported"] = INTROSPECTION_AUTH_METHODS
        response = JsonResponse(document)
        response["Access-Control-Allow-Origin"] = "*"
        return response


class OpenIDConfigurationView(ConnectDiscoveryInfoView):
    """``/.well-known/openid-configuration``: DOT's OpenID Provider metadata plus everything the RFC 8414
    document says (registration, revocation, introspection, grant types), with the same values wherever both speak."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        openid = json.loads(super().get(request, *args, **kwargs).content)
        oauth = json.loads(AuthorizationServerMetadataView().get(request).content)
        # The RFC 8414 view derives its issuer from its own well-known path; here the issuer is OIDC's.
        response = JsonResponse({**openid, **oauth, "issuer": openid["issuer"]})
        response["Access-Control-Allow-Origin"] = "*"
        return response
