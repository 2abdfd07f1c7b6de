"""The pages a call's question links to: connect your account to an upstream (authorization code with PKCE, the
platform as the OAuth client), or store your own API key for it; the OAuth callback; and the platform's client ID
metadata document. Each link is single use, short-lived and bound to the person, the tenant and the target.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from mcp_infra.addresses import base_url_from_request
from mcp_platform.oauth.headers import apply_page_policy, form_target, page_policy
from tenants.connections import flow, services
from tenants.connections.flow import ConnectFailed
from tenants.models import ConnectLink
from tenants.selectors import membership_get


def _user_id(request: HttpRequest) -> int:
    return int(request.user.pk)  # type: ignore[arg-type]


def _ended(request: HttpRequest, title: str, reason: str, status: int = 400) -> HttpResponse:
    return render(request, "oauth/connect_done.html", {"ok": False, "title": title, "reason": reason}, status=status)


def _link_or_none(request: HttpRequest, token: str) -> ConnectLink | None:
    link = services.connect_link_get(token=token)
    if link is None or link.user_id != _user_id(request):
        return None
    # The person must still be allowed in the tenant (a removed member's old link connects nothing).
    member = membership_get(tenant=link.tenant, user=request.user)  # type: ignore[arg-type]
    return link if not link.tenant.requires_authorization or member is not None else None


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def connect_page(request: HttpRequest, token: str) -> HttpResponseBase:
    """GET: what connecting means, with one button; POST: on to the upstream's authorization page (OAuth) or store
    the key (personal key)."""
    link = _link_or_none(request, token)
    if link is None:
        return apply_page_policy(
            _ended(
                request,
                "This link cannot be used",
                "It was used already, has expired, or was made for someone else. Call the tool again for a new one.",
                status=404,
            )
        )
    found = flow.target_auth(tenant_id=link.tenant_id, target=link.target)
    if found is None:
        return apply_page_policy(_ended(request, "Nothing to connect", "This item no longer uses people's accounts."))
    item, auth = found
    context: dict[str, Any] = {
        "link": link,
        "tenant": link.tenant,
        "title": services.target_title(item),
        "kind": auth["type"],
        "label": auth.get("label") or "API key",
    }
    if auth["type"] == "user_key":
        return apply_page_policy(_key_step(request, link, context))
    base_url = base_url_from_request(request)
    try:
        if request.method == "POST":
            return redirect(async_to_sync(flow.begin)(link=link, base_url=base_url))
        _row, server = async_to_sync(flow.registration)(
            tenant_id=link.tenant_id, target=link.target, item=item, auth=auth, base_url=base_url
        )
    except ConnectFailed as exc:
        return apply_page_policy(_ended(request, "Connecting is not possible right now", str(exc), status=502))
    context["issuer"] = server.issuer or server.authorization_endpoint
    target = form_target(server.authorization_endpoint)
    return apply_page_policy(render(request, "oauth/connect.html", context), [target] if target else [])


def _key_step(request: HttpRequest, link: ConnectLink, context: dict[str, Any]) -> HttpResponse:
    if request.method == "POST":
        key = request.POST.get("key", "")
        problem = services.personal_key_problem(key)
        if problem is None and services.connect_link_use(link=link):
            services.credential_store_key(
                tenant_id=link.tenant_id, user_id=link.user_id, target=link.target, key=key.strip()
            )
            flow.key_stored(link)
            done = {"ok": True, "title": "Key saved", "reason": f"{context['title']} now uses your key."}
            return render(request, "oauth/connect_done.html", done)
        context["error"] = problem or "This link was used already."
    return render(request, "oauth/connect_key.html", context, status=400 if "error" in context else 200)


@login_required
@require_GET
def connect_callback(request: HttpRequest) -> HttpResponseBase:
    """Where the upstream's authorization server sends the person back: the code becomes their tokens."""
    state = request.GET.get("state", "")
    if request.GET.get("error"):
        # The person said no at the upstream (or it refused): nothing is stored, the link stays unused until it lapses.
        reason = request.GET.get("error_description") or request.GET.get("error", "")
        return page_policy(_ended)(request, "Not connected", f"The upstream answered: {reason[:300]}")
    code = request.GET.get("code", "")
    if not state or not code:
        return page_policy(_ended)(request, "Not connected", "The upstream sent you back without a code.")
    try:
        link = async_to_sync(flow.finish)(
            state=state, code=code, user_id=_user_id(request), base_url=base_url_from_request(request)
        )
    except ConnectFailed as exc:
        return page_policy(_ended)(request, "Not connected", str(exc))
    found = flow.target_auth(tenant_id=link.tenant_id, target=link.target)
    title = services.target_title(found[0] if found else None)
    done = {"ok": True, "title": "Connected", "reason": f"{title} can now act as you. Go back to your client."}
    return page_policy(render)(request, "oauth/connect_done.html", done)


@require_GET
def client_metadata_document(request: HttpRequest) -> JsonResponse:
    """The platform's OAuth client ID metadata document (its URL is the ``client_id``)."""
    response = JsonResponse(flow.client_metadata(base_url_from_request(request)))
    response["Cache-Control"] = "public, max-age=3600"
    return response


urlpatterns = [
    path("callback/", connect_callback, name="connect-callback"),
    path("client-metadata.json", client_metadata_document, name="connect-client-metadata"),
    path("<str:token>/", connect_page, name="connect-page"),
]
