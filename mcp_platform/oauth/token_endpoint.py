"""The token endpoint: django-oauth-toolkit's view, each request in one database transaction.

The validator locks what a grant consumes (the authorization code's row, the refresh token's rows) while it
validates it, so two requests presenting the same code or refresh token are serialized: the first is issued
tokens, the second then finds the code consumed or the refresh token rotated and is answered ``invalid_grant``
(with the replay's revocations committed), never a 500 from a row that vanished between two reads.
"""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from django.http import HttpRequest, HttpResponse
from oauth2_provider.models import get_access_token_model
from oauth2_provider.views import TokenView


class AtomicTokenView(TokenView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with transaction.atomic(using=router.db_for_write(get_access_token_model())):
            response: HttpResponse = super().post(request, *args, **kwargs)
        return response
