"""The authorization server's routes, in django-oauth-toolkit's ``oauth2_provider`` namespace.

Mounted at the site root: the well-known documents must sit at the origin (RFC 8414, RFC 9728, OpenID Connect
discovery).
"""

from django.urls import path, re_path
from oauth2_provider import views as dot_views

from mcp_platform.oauth.authorize import TenantAuthorizationView
from mcp_platform.oauth.introspection import TenantIntrospectTokenView
from mcp_platform.oauth.metadata import (
    AuthorizationServerMetadataView,
    OpenIDConfigurationView,
    TenantResourceMetadataView,
)
from mcp_platform.oauth.registration import LimitedRegistrationManagementView, LimitedRegistrationView
from mcp_platform.oauth.token_endpoint import AtomicTokenView, RevocationView

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        AuthorizationServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/openid-configuration",
        OpenIDConfigurationView.as_view(),
        name="oidc-connect-discovery-info",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/t/(?P<tenant>[-a-zA-Z0-9_]+)/(?P<endpoint>mcp|sse|messages)$",
        TenantResourceMetadataView.as_view(),
        name="tenant-resource-metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/t/(?P<tenant>[-a-zA-Z0-9_]+)/s/(?P<server>[-a-zA-Z0-9_]+)"
        r"/(?P<endpoint>mcp|sse|messages)$",
        TenantResourceMetadataView.as_view(),
        name="server-resource-metadata",
    ),
    path("oauth/authorize/", TenantAuthorizationView.as_view(), name="authorize"),
    path("oauth/token/", AtomicTokenView.as_view(), name="token"),
    path("oauth/revoke/", RevocationView.as_view(), name="revoke-token"),
    path("oauth/introspect/", TenantIntrospectTokenView.as_view(), name="introspect"),
    path("oauth/jwks/", dot_views.JwksInfoView.as_view(), name="jwks-info"),
    path("oauth/userinfo/", dot_views.UserInfoView.as_view(), name="user-info"),
    path("oauth/register/", LimitedRegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        LimitedRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
