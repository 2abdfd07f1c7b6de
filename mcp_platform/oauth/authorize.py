"""The authorization endpoint: django-oauth-toolkit's consent flow, limited to one tenant endpoint per grant."""

from __future__ import annotations

import contextlib
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from oauth2_provider.cimd import is_cimd_client_id
from oauth2_provider.exceptions import FatalClientError, OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidClientIdError, InvalidRequestError

from mcp_infra.addresses import base_url_from_request
from mcp_platform.oauth.audience import AudienceRefused, grant_tenant
from mcp_platform.oauth.headers import apply_page_policy, form_target
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.presentation import client_face, redirect_host
from mcp_platform.oauth.validators import pkce_problem

UNKNOWN_CLIENT = (
    "This app is not registered here, or its registration expired. Go back to the app and connect again: "
    "it will register itself anew."
)


class TenantAuthorizationView(AuthorizationView):
    """DOT's ``AuthorizationView`` (PKCE, exact redirect URIs, ``iss``, client metadata documents) plus the
    audience rules.

    The resource is checked when the consent page is shown and again when it is submitted (the hidden
    field can be tampered with). PKCE other than a well-formed S256 challenge is refused before the consent page,
    by a redirect to the client once its redirect URI is known to be valid, so no one consents to a grant that
    would fail. An unknown ``client_id`` is ``invalid_client``, shown to the person (never a redirect,
    RFC 6749 §4.1.2.1).
    """

    template_name = "oauth/consent.html"
    form_targets: tuple[str, ...] = ()

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().dispatch(request, *args, **kwargs)
        return apply_page_policy(response, self.form_targets)  # type: ignore[return-value]

    def _application(self, client_id: str | None) -> TenantApplication | None:
        if not client_id:
            return None
        found: TenantApplication | None = get_application_model().objects.filter(client_id=client_id).first()
        return found

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        client_id = request.GET.get("client_id")
        application = self._application(client_id)
        if application is None and client_id and is_cimd_client_id(client_id):
            # First sight of a client metadata document: DOT's validation fetches and stores it, so the
            # audience rules below apply to it like to any client. Its errors are reported by DOT's get().
            with contextlib.suppress(OAuthToolkitError):
                self.validate_authorization_request(request)
            application = self._application(client_id)
        if application is not None:
            try:
                self.tenant = grant_tenant(
                    resources=request.GET.getlist("resource"),
                    base_url=base_url_from_request(request),
                    application=application,
                    user=request.user,
                )
            except AudienceRefused as refused:
                # Shown here, not redirected: the person at the browser is the one who can act on it.
                context = {"application": application, "face": client_face(application), "error": refused}
                return render(request, "oauth/refused.html", context, status=403)
        return super().get(request, *args, **kwargs)

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        """DOT's validation (client, redirect URI, then the rest), plus the PKCE rules of ``pkce_problem``.

        Raises ``FatalClientError`` (shown) or ``OAuthToolkitError`` (redirected to the client).
        """
        scopes, credentials = super().validate_authorization_request(request)
        problem = pkce_problem(credentials.get("code_challenge"), credentials.get("code_challenge_method"))
        if problem:
            error = InvalidRequestError(description=problem, state=credentials.get("state"))
            raise OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"])
        return scopes, credentials

    def error_response(self, error: OAuthToolkitError, application: Any, **kwargs: Any) -> HttpResponse:
        if isinstance(error.oauthlib_error, InvalidClientIdError):
            error = FatalClientError(error=CustomOAuth2Error(error="invalid_client", description=UNKNOWN_CLIENT))
        elif application is None:
            # DOT passes no client for errors found while validating the request; its redirect then allows only
            # http(s), and a native client's private-use scheme would be refused.
            application = self._application(self.request.GET.get("client_id"))
        response: HttpResponse = super().error_response(error, application, **kwargs)
        return response

    def redirect(self, redirect_to: str, application: Any) -> HttpResponse:
        """Every redirect to the client names the issuer (RFC 9207 §2: error responses too; DOT adds it only to
        the responses it creates itself)."""
        issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
        response: HttpResponse = super().redirect(_add_iss_to_redirect(redirect_to, issuer), application)
        return response

    def form_valid(self, form: Any) -> HttpResponse:
        application = self._application(form.cleaned_data.get("client_id"))
        if application is not None and form.cleaned_data.get("allow"):
            try:
                grant_tenant(
                    resources=(form.cleaned_data.get("resource") or "").split(),
                    base_url=base_url_from_request(self.request),
                    application=application,
                    user=self.request.user,
                )
            except AudienceRefused as refused:
                error = OAuthToolkitError(
                    error=CustomOAuth2Error(
                        error=refused.error, description=refused.description, state=form.cleaned_data.get("state")
                    ),
                    redirect_uri=form.cleaned_data["redirect_uri"],
                )
                return self.error_response(error, application)
        response: HttpResponse = super().form_valid(form)
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["tenant"] = getattr(self, "tenant", None)
        redirect_uri = context.get("redirect_uri") or ""
        context["redirect_host"] = redirect_host(redirect_uri)
        application = context.get("application")
        if isinstance(application, TenantApplication):
            context["face"] = client_face(application)
        target = form_target(redirect_uri)
        self.form_targets = (target,) if target else ()
        return context
