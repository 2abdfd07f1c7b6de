"""Dynamic Client Registration (RFC 7591) on django-oauth-toolkit's view, limited for anonymous use.

Anyone may register, so registration is rate-limited per address and platform-wide, and only what MCP
clients need is accepted: the authorization code grant, a few redirect URIs, a short name, and a logo
(kept only when it is a safe https URL; otherwise ignored, as RFC 7591 §2 allows).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.views import DynamicClientRegistrationView

from mcp_platform.oauth.models import TenantApplication, safe_logo_uri

PER_ADDRESS_PER_HOUR = 20
PLATFORM_PER_HOUR = 1000
MAX_REDIRECT_URIS = 10
MAX_CLIENT_NAME = 100
WINDOW_SECONDS = 3600


def _refuse(description: str, status: int = 400, error: str = "invalid_client_metadata") -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


def _over_limit(key: str, limit: int) -> bool:
    """Count one registration against ``key``; True when the window's limit is passed (shared cache)."""
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS)
        count = 1
    return count > limit


def metadata_problem(data: Any) -> str | None:
    """What is wrong with a registration request for this platform, or None."""
    if not isinstance(data, dict):
        return None  # DOT reports malformed bodies itself
    grant_types = data.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or set(grant_types) - {"authorization_code", "refresh_token"}:
        return "Only the authorization_code and refresh_token grant types are offered."
    response_types = data.get("response_types", ["code"])
    if response_types != ["code"]:
        return 'Only the "code" response type is offered.'
    redirect_uris = data.get("redirect_uris")
    if not isinstance(redirect_uris, list) or not 1 <= len(redirect_uris) <= MAX_REDIRECT_URIS:
        return f"Register between 1 and {MAX_REDIRECT_URIS} redirect_uris."
    name = data.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_CLIENT_NAME:
        return f"client_name must be a string of at most {MAX_CLIENT_NAME} characters."
    return None


class LimitedRegistrationView(DynamicClientRegistrationView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        address = request.META.get("REMOTE_ADDR", "unknown")
        if _over_limit(f"oauth:dcr:addr:{address}", PER_ADDRESS_PER_HOUR) or _over_limit(
            "oauth:dcr:all", PLATFORM_PER_HOUR
        ):
            refusal = _refuse("Too many client registrations; try again later.", 429, "slow_down")
            refusal["Retry-After"] = str(WINDOW_SECONDS)
            return refusal
        try:
            data = json.loads(request.body)
        except ValueError:
            data = None
        problem = metadata_problem(data)
        if problem:
            return _refuse(problem)
        response: HttpResponse = super().post(request, *args, **kwargs)
        logo_uri = safe_logo_uri(data.get("logo_uri")) if isinstance(data, dict) else None
        if response.status_code == 201 and logo_uri:
            registered = json.loads(response.content)
            TenantApplication.objects.filter(client_id=registered["client_id"]).update(logo_uri=logo_uri)
            registered["logo_uri"] = logo_uri
            return JsonResponse(registered, status=201)
        return response
