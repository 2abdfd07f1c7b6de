"""RFC 9728 protected-resource metadata for each tenant endpoint, on django-oauth-toolkit's view."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from oauth2_provider.views import OAuthProtectedResourceMetadataView

from mcp_platform.oauth.resource import base_url_from_request, endpoint_url
from tenants.selectors import tenant_get_servable


class TenantResourceMetadataView(OAuthProtectedResourceMetadataView):
    """``/.well-known/oauth-protected-resource/t/<tenant>/mcp``: DOT's document with ``resource`` = the endpoint."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        tenant = tenant_get_servable(slug=kwargs["tenant"])
        if tenant is None:
            raise Http404("No such tenant.")
        self.resource = endpoint_url(base_url_from_request(request), tenant.slug)
        self.resource_name = tenant.name
        return super().get(request, *args, **kwargs)

    def get_resource(self, request: HttpRequest) -> str:
        return self.resource

    def get_resource_name(self) -> str:
        return self.resource_name
