"""Dynamic Client Registration (RFC 7591) on django-oauth-toolkit's view, limited for anonymous use.

Anyone may register, so registration is rate-limited per client and network (``throttling``), and only what MCP
clients need is accepted: the authorization code grant, a few redirect URIs, a short name, and a logo
(kept only when it is a safe https URL; otherwise ignored, as RFC 7591 §2 allows). The same rules hold when a
client rewrites its registration (RFC 7592) and for client metadata documents. A registered client that is
never used is deleted after ``MCP_PLATFORM["DCR_UNUSED_CLIENT_LIFETIME"]``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import DynamicClientRegistrationManagementView, DynamicClientRegistrationView

from mcp_platform.oauth.models import TenantApplication, safe_logo_uri
from mcp_platform.oauth.throttling import registration_refused

MAX_REDIRECT_URIS = 10
MAX_CLIENT_NAME = 100


def _refuse(description: str, status: int = 400, error: str = "invalid_client_metadata") -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


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


def _body(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body)
    except ValueError:
        return None  # DOT reports malformed bodies itself


class LimitedRegistrationView(DynamicClientRegistrationView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        retry_after = registration_refused(request.META, "dcr")
        if retry_after is not None:
            # RFC 7591 §3.2.2 defines error codes for bad metadata only; a limit is the HTTP 429 status with
            # Retry-After, and RFC 6749's "temporarily_unavailable", which SDK clients report as such.
            refusal = _refuse(
                f"Too many client registrations from your network; try again in {retry_after} seconds.",
                429,
                "temporarily_unavailable",
            )
            refusal["Retry-After"] = str(retry_after)
            return refusal
        data = _body(request)
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


class LimitedRegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592 reads, updates and deletes; an update must stay within what registration accepts."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        problem = metadata_problem(_body(request))
        if problem:
            return _refuse(problem)
        response: HttpResponse = super().put(request, client_id, *args, **kwargs)
        return response


def dcr_clients_purge_unused(*, older_than: timedelta, batch_size: int = 1000) -> int:
    """Delete self-registered clients older than ``older_than`` that hold no grant and no token but their
    registration token; returns how many. Such a client learns its id is unknown (``invalid_client``) and
    registers again.

    Each batch is locked before the check, so a token minted meanwhile either shows in the check or waits
    for the delete to finish (inserting a token locks its client row).
    """
    application_model = get_application_model()
    registration_only = Q(user__isnull=True, scope=oauth2_settings.DCR_REGISTRATION_SCOPE)
    candidates = application_model.objects.filter(
        registration_source=application_model.RegistrationSource.DCR, created__lt=timezone.now() - older_than
    ).order_by("pk")
    deleted = 0
    last_pk = 0
    while True:
        batch = list(candidates.filter(pk__gt=last_pk).values_list("pk", flat=True)[:batch_size])
        if not batch:
            return deleted
        last_pk = batch[-1]
        with transaction.atomic():
            locked = set(candidates.select_for_update().filter(pk__in=batch).values_list("pk", flat=True))
            used = {
                *get_grant_model().objects.filter(application_id__in=locked).values_list("application_id", flat=True),
                *get_refresh_token_model()
                .objects.filter(application_id__in=locked)
                .values_list("application_id", flat=True),
                *get_access_token_model()
                .objects.filter(application_id__in=locked)
                .exclude(registration_only)
                .values_list("application_id", flat=True),
            }
            unused = locked - used
            application_model.objects.filter(pk__in=unused).delete()
            deleted += len(unused)
