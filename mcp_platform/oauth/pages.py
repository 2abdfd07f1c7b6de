"""Pages people see around authorization: sign-in and sign-out (Django's views, our templates), connected apps (the
clients they allowed, and their own accounts in tools: ``tool_accounts``), and the page an invitation's link opens."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from mcp_platform.oauth.connections import connection_list, connection_revoke
from mcp_platform.oauth.headers import page_policy
from mcp_platform.oauth.invitations import invitation_page
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.presentation import client_face
from mcp_platform.oauth.tool_accounts import tool_account_disconnect, tool_account_replace, tool_accounts


class SignInView(auth_views.LoginView):
    """Django's sign-in; when it leads on to a consent page, it names the app waiting there."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        target = urlsplit(str(context.get("next") or ""))
        if target.path == reverse("oauth2_provider:authorize") and not target.netloc:
            client_id = parse_qs(target.query).get("client_id", [""])[0]
            application = TenantApplication.objects.filter(client_id=client_id).first() if client_id else None
            context["continuing_to"] = client_face(application) if application else None
        return context


@page_policy
@login_required
@require_http_methods(["GET", "HEAD"])
def connected_apps(request: HttpRequest) -> HttpResponse:
    connections = connection_list(user=request.user)  # type: ignore[arg-type]
    accounts = tool_accounts(user_id=int(request.user.pk))  # type: ignore[arg-type]
    return render(request, "oauth/connected_apps.html", {"connections": connections, "accounts": accounts})


@page_policy
@login_required
@require_POST
def connected_app_revoke(request: HttpRequest, application_id: int) -> HttpResponse:
    resource = request.POST.get("resource", "")
    if not resource:
        return HttpResponseBadRequest("Say which workspace endpoint to revoke the app's access to.")
    if connection_revoke(user=request.user, application_id=application_id, resource=resource):  # type: ignore[arg-type]
        messages.success(request, "Access revoked. The app can no longer act for you there.")
    return redirect("oauth-connected-apps")


urlpatterns = [
    path("login/", page_policy(SignInView.as_view()), name="oauth-login"),
    path("logout/", page_policy(auth_views.LogoutView.as_view(next_page="oauth-login")), name="oauth-logout"),
    path("apps/", connected_apps, name="oauth-connected-apps"),
    path("apps/<int:application_id>/revoke/", connected_app_revoke, name="oauth-connected-app-revoke"),
    path("apps/accounts/<int:pk>/disconnect/", tool_account_disconnect, name="oauth-tool-account-disconnect"),
    path("apps/accounts/<int:pk>/replace/", tool_account_replace, name="oauth-tool-account-replace"),
    path("invitation/<str:token>/", invitation_page, name="account-invitation"),
]
