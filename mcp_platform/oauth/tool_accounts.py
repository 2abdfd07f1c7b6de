"""A person's accounts in tools, on their Connected apps page: the OAuth connections and personal keys they gave a
tenant's tools (``tenants.connections``), with Disconnect (revoked at the upstream where it offers revocation),
Remove and Replace. Only their own rows; another person's is a 404."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from mcp_platform.oauth.headers import page_policy
from tenants.connections import flow, services
from tenants.connections.listing import target_titles
from tenants.models import PersonalCredential

REPLACE_PREFIX = "replace-"


@dataclass(frozen=True, slots=True)
class ToolAccount:
    """One credential as the person's page shows it (never its values)."""

    pk: int
    workspace: str
    title: str
    kind: str
    kind_label: str
    status: str
    status_label: str
    connected_at: datetime
    last_used_at: datetime | None

    @property
    def is_key(self) -> bool:
        return self.kind == PersonalCredential.Kind.KEY

    @property
    def needs_reconnecting(self) -> bool:
        return self.status == PersonalCredential.Status.NEEDS_PERSON


KIND_LABELS = {PersonalCredential.Kind.OAUTH: "OAuth connection", PersonalCredential.Kind.KEY: "Personal key"}


def tool_accounts(*, user_id: int) -> list[ToolAccount]:
    """The person's credentials in every workspace, newest first, each with what it is for."""
    credentials = services.credentials_of(user_id=user_id)
    titles = target_titles((c.tenant_id, c.target) for c in credentials)
    return [
        ToolAccount(
            pk=c.pk,
            workspace=c.tenant.name,
            title=titles[(c.tenant_id, c.target)],
            kind=c.kind,
            kind_label=KIND_LABELS.get(c.kind, c.get_kind_display()),  # type: ignore[call-overload]
            status=c.status,
            status_label=c.get_status_display(),  # type: ignore[attr-defined]
            connected_at=c.created_at,
            last_used_at=c.last_used_at,
        )
        for c in credentials
    ]


def _own(request: HttpRequest, pk: int) -> PersonalCredential:
    """The signed-in person's credential ``pk``; anyone else's, or none, is a 404."""
    return get_object_or_404(PersonalCredential.objects.select_related("tenant"), pk=pk, user_id=request.user.pk)


def _title(credential: PersonalCredential) -> str:
    return target_titles([(credential.tenant_id, credential.target)])[(credential.tenant_id, credential.target)]


@page_policy
@login_required
@require_POST
def tool_account_disconnect(request: HttpRequest, pk: int) -> HttpResponse:
    """Remove the credential (a key, or an OAuth connection, whose tokens are then revoked at the upstream where it
    offers revocation), and say what the upstream answered."""
    credential = _own(request, pk)
    title, workspace = _title(credential), credential.tenant.name
    outcome = flow.disconnect(credential=credential)
    if outcome == flow.KEY_REMOVED:
        messages.success(request, f"Your key for {title} on {workspace} is removed.")
    elif outcome == flow.REVOKED:
        messages.success(request, f"Disconnected {title} on {workspace}. The upstream confirmed the revocation.")
    else:
        messages.warning(
            request,
            f"Disconnected {title} on {workspace}: the platform no longer holds your tokens. The upstream did not "
            "confirm a revocation (it offers none, or did not answer): to end them there too, remove the access "
            "in your account at the upstream.",
        )
    return redirect("oauth-connected-apps")


@page_policy
@login_required
@require_POST
def tool_account_replace(request: HttpRequest, pk: int) -> HttpResponse:
    """A fresh connect link for the credential's target: the key page (a key to replace) or the OAuth connection
    again (one that needs reconnecting)."""
    credential = _own(request, pk)
    token = services.connect_link_create(
        tenant_id=credential.tenant_id,
        user_id=credential.user_id,
        target=credential.target,
        elicitation_id=REPLACE_PREFIX + secrets.token_urlsafe(12),
    )
    return redirect("connect-page", token=token)
