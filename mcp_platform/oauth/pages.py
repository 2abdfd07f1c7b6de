"""Pages people see during authorization: sign-in (Django's view, our template)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="registration/login.html", redirect_authenticated_user=True),
        name="oauth-login",
    ),
]
