"""A token or revocation request that fails with a server error is reported (the error log, the admins' mail)
without any of its parameters: each is a credential or leads to one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory
from django.views.debug import SafeExceptionReporterFilter
from oauth2_provider.views import RevokeTokenView, TokenView

from mcp_platform.oauth.token_endpoint import AtomicTokenView, RevocationView

CREDENTIALS = {
    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
    "subject_token": "subject-token-value",
    "code": "code-value",
    "code_verifier": "verifier-value",
    "refresh_token": "refresh-token-value",
    "client_secret": "client-secret-value",
    "token": "token-value",
}


class Fault(Exception):
    """What a server error inside django-oauth-toolkit's view looks like from outside."""


def reported(request: Any) -> dict[str, str]:
    return dict(SafeExceptionReporterFilter().get_post_parameters(request))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("view", "inner", "step"),
    [
        (AtomicTokenView, TokenView, "create_token_response"),
        (RevocationView, RevokeTokenView, "create_revocation_response"),
    ],
    ids=["token", "revoke"],
)
def test_a_failed_request_is_reported_without_its_credentials(
    view: type, inner: type, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        raise Fault("the database went away")

    # The fault is injected where django-oauth-toolkit's view hands the request to oauthlib, under its own marking
    # of sensitive parameters: what is tested is what the report of the fault shows.
    monkeypatch.setattr(inner, step, fails)
    request = RequestFactory().post("/oauth/token/", CREDENTIALS)

    with pytest.raises(Fault):
        view.as_view()(request)

    shown = reported(request)
    assert set(shown) == set(CREDENTIALS)
    assert not any(value in str(shown) for value in CREDENTIALS.values())
