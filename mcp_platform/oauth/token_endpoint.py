"""The token endpoint: django-oauth-toolkit's view, each request in one database transaction.

The validator locks what a grant consumes (the authorization code's row, the refresh token's rows) while it
validates it, so two requests presenting the same code or refresh token are serialized: the first is issued
tokens, the second then finds the code consumed or the refresh token rotated and is answered ``invalid_grant``
(with the replay's revocations committed), never a 500 from a row that vanished between two reads.

Every parameter these endpoints take is a credential or leads to one (a code, a verifier, a refresh token, a subject
token, a client secret), so an error report of a request that failed hides them all: DOT's own view marks only
``password`` and ``client_secret``, and its decorator runs inside ours, so the mark is set again as the error leaves.
"""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider.models import get_access_token_model
from oauth2_provider.views import RevokeTokenView, TokenView

# What Django's error reports read (``django.views.decorators.debug.sensitive_post_parameters``): every parameter.
EVERY_PARAMETER = "__ALL__"


class AtomicTokenView(TokenView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            with transaction.atomic(using=router.db_for_write(get_access_token_model())):
                response: HttpResponse = super().post(request, *args, **kwargs)
        except BaseException:
            request.sensitive_post_parameters = EVERY_PARAMETER  # type: ignore[attr-defined]
            raise
        return response


@method_decorator(sensitive_post_parameters(), name="post")
class RevocationView(RevokeTokenView):
    """RFC 7009 revocation, whose error reports hide the token and the client's secret like the token endpoint's."""
