"""RFC 7662 token introspection for the upstreams a tenant's clients exchange tokens for: django-oauth-toolkit's
``IntrospectTokenView``, answering only an authenticated confidential client of a tenant, and only about the tokens
exchanged (RFC 8693, ``token_exchange``) for one of its own exchange targets.

Why so narrow: an upstream that trusts this authorization server is shown tokens whose audience is itself, and needs
to learn nothing about any other. A client may ask only about tokens whose one audience is in its **Token exchange
targets** and that a client of its own tenant exchanged, for a person still active and a member of that (servable)
tenant. Every other token, existing or not, is ``{"active": false}``, so the answer never tells another tenant's
token from a made-up one. The caller authenticates with its secret (HTTP Basic or the body), never with a bearer
token (DOT would also accept one holding an ``introspection`` scope; the platform issues no such scope).
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider.compat import login_not_required
from oauth2_provider.models import AbstractAccessToken, AbstractApplication, get_access_token_model
from oauth2_provider.views import IntrospectTokenView
from oauthlib.common import Request

from mcp_platform.oauth.codes import checksum
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.throttling import token_introspection_refused
from tenants.selectors import membership_get, tenant_get_servable

INACTIVE = {"active": False}


def _refusal(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def may_introspect(client: TenantApplication) -> bool:
    """Whether ``client`` may use the introspection endpoint: one that may exchange tokens (confidential, bound to a
    tenant, with exchange targets), as an upstream's own client is, its targets naming the upstream."""
    return client.may_exchange_tokens


def visible_token(*, value: str, client: TenantApplication) -> AbstractAccessToken | None:
    """The access token ``value`` if ``client`` may learn about it (see the module docstring), else None. Its
    expiry is left to DOT's answer."""
    token = (
        get_access_token_model()
        .objects.select_related("user", "exchange__actor")
        .filter(token_checksum=checksum(value))
        .first()
    )
    exchange = getattr(token, "exchange", None) if token is not None else None
    if token is None or exchange is None or exchange.actor.tenant_id != client.tenant_id:
        return None
    resource = token.resource
    if not (isinstance(resource, list) and len(resource) == 1 and resource[0] in client.exchange_target_list()):
        return None
    tenant = tenant_get_servable(slug=client.tenant.slug) if client.tenant is not None else None
    user = token.user
    if tenant is None or user is None or not user.is_active or membership_get(tenant=tenant, user=user) is None:
        return None
    return token


@method_decorator(csrf_exempt, name="dispatch")
@method_decorator(login_not_required, name="dispatch")
@method_decorator(sensitive_post_parameters(), name="dispatch")  # the token, the secret
class TenantIntrospectTokenView(IntrospectTokenView):
    """``/oauth/introspect/``: POST only (a token in a URL ends up in access logs). Refusals: ``401 invalid_client``
    (no confidential client authenticated), ``403 unauthorized_client`` (a client that may not introspect), ``429
    temporarily_unavailable`` with ``Retry-After`` (``TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR``), DOT's ``400
    invalid_request`` (no ``token``)."""

    http_method_names = ["post"]
    client: TenantApplication

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "POST":
            return self.http_method_not_allowed(request, *args, **kwargs)
        client = self._authenticated_client(request)
        if client is None:
            return _refusal(
                401,
                "invalid_client",
                "Authenticate as a confidential client: HTTP Basic, or client_id and client_secret in the body.",
                {"WWW-Authenticate": 'Basic realm="oauth"'},
            )
        if not may_introspect(client):
            return _refusal(
                403,
                "unauthorized_client",
                "This client may not introspect tokens: it has no token exchange targets.",
            )
        retry_after = token_introspection_refused(client_pk=client.pk)
        if retry_after is not None:
            return _refusal(
                429,
                "temporarily_unavailable",
                "This client introspected too many tokens this hour; try again later.",
                {"Retry-After": str(retry_after)},
            )
        self.client = client
        response: HttpResponse = self.post(request, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response

    def _authenticated_client(self, request: HttpRequest) -> TenantApplication | None:
        """The confidential client the request authenticates as (DOT's check of its secret), or None."""
        core = self.get_oauthlib_core()
        uri, http_method, body, headers = core._extract_params(request)
        oauth_request = Request(uri, http_method, body, headers)
        if not core.server.request_validator.authenticate_client(oauth_request):
            return None
        client = oauth_request.client
        if not isinstance(client, TenantApplication) or client.client_type != AbstractApplication.CLIENT_CONFIDENTIAL:
            return None
        return client

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        """DOT's answer about a token the client may see (plus ``sub``, the person's id, and ``act``, the client that
        exchanged it: RFC 8693 §4.1), ``{"active": false}`` about any other."""
        value = request.POST.get("token")
        if value is None:
            response: HttpResponse = self.get_token_response(None)
            return response
        token = visible_token(value=value, client=self.client)
        if token is None:
            return JsonResponse(INACTIVE)
        answer = json.loads(self.get_token_response(value).content)
        if answer.get("active"):
            answer["sub"] = str(token.user_id)
            answer["act"] = {"client_id": token.exchange.actor.client_id}
        return JsonResponse(answer)
