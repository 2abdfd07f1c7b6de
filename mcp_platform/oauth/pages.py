"""Pages people see around authorization: sign-in (Django's view, our template) and connected apps."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from mcp_platform.oauth.connections import connection_list, connection_revoke


@login_required
@require_http_methods(["GET", "HEAD"])
def connected_apps(request: HttpRequest) -> HttpResponse:
    return render(request, "oauth/connected_apps.html", {"connections": connection_list(user=request.user)})  # type: ignore[arg-type]


@login_required
@require_POST
def connected_app_revoke(request: HttpRequest, application_id: int) -> HttpResponse:
    if connection_revoke(user=request.user, application_id=application_id):  # type: ignore[arg-type]
        messages.success(request, "The app was disconnected. It can no longer act for you.")
    return redirect("oauth-connected-apps")


urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="registration/login.html", redirect_authenticated_user=True),
        name="oauth-login",
    ),
    path("apps/", connected_apps, name="oauth-connected-apps"),
    path("apps/<int:application_id>/revoke/", connected_app_revoke, name="oauth-connected-app-revoke"),
]
