"""Token exchange for a call (RFC 8693): where a tenant's upstream trusts this platform's authorization server, a
call of its tools trades the caller's token for one whose audience is the upstream, through the token endpoint's
own view and grant (in process: the same validation, limits and audit as a client's request), and sends that,
never the caller's token. Registered with ``tenants.connections.credentials`` at start-up.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from asgiref.sync import sync_to_async
from django.http import HttpRequest, QueryDict
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from mcp_core.errors import ToolError
from mcp_infra.addresses import is_tenant_endpoint
from mcp_platform.oauth.token_endpoint import AtomicTokenView
from mcp_platform.oauth.token_exchange import ACCESS_TOKEN_TYPE, GRANT_TYPE
from tenants.connections.acting import Caller
from tenants.models import Tenant
from tenants.secrets import SecretNotFound, SecretUnreadable, secret_value


def _subject_token(tenant: Tenant, caller: Caller) -> str | None:
    """The caller's newest live access token for this tenant's endpoints (of any of its servers) through the client it
    called with (a task looks it up as it runs: a revoked authorization leaves none)."""
    tokens = get_access_token_model().objects.filter(
        user_id=caller.user_id, application__client_id=caller.client_id, expires__gt=timezone.now()
    )
    for token in tokens.order_by("-created")[:5]:
        resource = token.resource
        if (
            isinstance(resource, list)
            and len(resource) == 1
            and isinstance(resource[0], str)
            and is_tenant_endpoint(resource[0], caller.base_url, tenant.slug)
        ):
            return str(token.token)
    return None


def _token_request(base_url: str, form: dict[str, str], client_id: str, client_secret: str) -> HttpRequest:
    parts = urlsplit(base_url)
    request = HttpRequest()
    request.method = "POST"
    request.path = request.path_info = "/oauth/token/"
    basic = base64.b64encode(f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()).decode()
    body = urlencode(form)
    request.META = {
        "HTTP_HOST": parts.netloc,
        "SERVER_NAME": parts.hostname or "localhost",
        "SERVER_PORT": str(parts.port or (443 if parts.scheme == "https" else 80)),
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": f"Basic {basic}",
        "wsgi.url_scheme": parts.scheme or "http",
    }
    if parts.scheme == "https":
        request.META["HTTPS"] = "on"
    request.POST = QueryDict(body)
    request._body = body.encode()  # type: ignore[attr-defined]
    return request


def exchange_for_call_sync(tenant_id: int, caller: Caller, auth: dict[str, Any]) -> tuple[str, float | None]:
    """An access token for ``auth["audience"]`` acting as ``caller``'s person. Raises ``ToolError``."""
    tenant = Tenant.objects.get(pk=tenant_id)
    subject = _subject_token(tenant, caller) if caller.user_id is not None and caller.client_id else None
    if subject is None:
        raise ToolError(
            "This tool acts as you through a token exchange, which needs your client's live authorization for "
            f"{tenant.name}; sign in again from your client."
        )
    try:
        client_secret = secret_value(tenant_id=tenant_id, name=auth["secret"])
    except (SecretNotFound, SecretUnreadable) as exc:
        raise ToolError(f"the token exchange cannot authenticate its client: {exc}") from None
    form = {
        "grant_type": GRANT_TYPE,
        "subject_token": subject,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "resource": auth["audience"],
    }
    if auth.get("scope"):
        form["scope"] = auth["scope"]
    response = AtomicTokenView.as_view()(_token_request(caller.base_url, form, auth["client_id"], client_secret))
    try:
        answer = json.loads(response.content)
    except ValueError:
        answer = {}
    if response.status_code != 200 or not isinstance(answer.get("access_token"), str):
        error = answer.get("error", f"HTTP {response.status_code}")
        description = answer.get("error_description", "")
        raise ToolError(f"the token exchange for {auth['audience']} was refused: {error} {description}".strip())
    lifetime = answer.get("expires_in")
    return answer["access_token"], float(lifetime) if isinstance(lifetime, (int, float)) else None


async def exchange_for_call(tenant_id: int, caller: Caller, auth: dict[str, Any]) -> tuple[str, float | None]:
    return await sync_to_async(exchange_for_call_sync)(tenant_id, caller, auth)
