"""The authorization server as django-oauth-toolkit assembles it: oauthlib's OpenID Connect server with the RFC 8693
token-exchange grant at its token endpoint (``OAUTH2_SERVER_CLASS``), and DOT's request reader keeping every value of
a repeated ``audience`` as it does of ``resource`` (``OAUTH2_BACKEND_CLASS``), so that the grant sees them all."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from oauth2_provider.oauth2_backends import OAuthLibCore
from oauthlib.openid import Server

from mcp_platform.oauth.token_exchange import GRANT_TYPE, INTERNAL_SUBJECT, TokenExchangeGrant

REPEATABLE_PARAMETERS = frozenset({"resource", "audience"})


class PlatformServer(Server):
    def __init__(self, request_validator: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(request_validator, *args, **kwargs)
        self.token_exchange_grant = TokenExchangeGrant(request_validator)
        self.grant_types[GRANT_TYPE] = self.token_exchange_grant


class PlatformOAuthLibCore(OAuthLibCore):
    def _get_extra_credentials(self, request: HttpRequest) -> dict[str, Any] | None:
        """What only code of this process can say (an attribute of the Django request, never a parameter): the
        subject token row of a token exchange made for a call (``call_exchange``)."""
        subject = getattr(request, INTERNAL_SUBJECT, None)
        return {INTERNAL_SUBJECT: subject} if isinstance(subject, int) else None

    def extract_body(self, request: HttpRequest) -> list[tuple[str, str]]:
        """The POST parameters, each once (the last value) except RFC 8707/8693 targets, which may repeat."""
        return [
            (key, value)
            for key, values in request.POST.lists()
            for value in (values if key in REPEATABLE_PARAMETERS else values[-1:])
        ]
