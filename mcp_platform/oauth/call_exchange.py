"""Token exchange for a call (RFC 8693): where a tenant's upstream trusts this platform's authorization server, a
call of its tools trades the caller's token for one whose audience is the upstream, through the token endpoint's
own view and grant (in process: the same validation, limits and audit as a client's request), and sends that,
never the caller's token. The subject is the row of the token the request carried, named in process (DOT keeps
only digests of tokens, and the gateway keeps the token itself), so a task, which outlives its request, cannot
exchange. The exchanged token is reused while it lives, for the same caller's token (one exchange per caller and
upstream, not one per call). Registered with ``tenants.connections.credentials`` at start-up.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from asgiref.sync import sync_to_async
from django.http import HttpRequest, QueryDict

from mcp_core.errors import ToolError
from mcp_platform.oauth.token_endpoint import AtomicTokenView
from mcp_platform.oauth.token_exchange import ACCESS_TOKEN_TYPE, GRANT_TYPE, INTERNAL_SUBJECT
from tenants.connections.acting import Caller
from tenants.secrets import SecretNotFound, SecretUnreadable, secret_value

# An exchanged token is reused until shortly before it expires, for as long as the caller's own token it was
# exchanged for is still live (looked up on every call, so a revoked authorization stops the reuse at once).
REUSE_MARGIN = 30.0
CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class _Exchanged:
    token: str
    lifetime: float | None
    reusable_until: float


# Per process: (tenant, subject token digest, client, audience, scope) -> the token it was exchanged for.
_exchanged: dict[tuple[object, ...], _Exchanged] = {}


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
    if caller.token_id is None or caller.user_id is None:
        # A task (or the console) runs after the request that carried the person's token, which is never kept.
        raise ToolError(
            f"This tool acts as you through a token exchange for {auth['audience']}: it runs only in a request that "
            "carries your client's authorization, not as a task or from the console."
        )
    # The gateway checked the caller's token on this request: while that token lives, its exchanged token is reused.
    key = (tenant_id, caller.token_id, auth["client_id"], auth["audience"], auth.get("scope"))
    now = time.monotonic()
    cached = _exchanged.get(key)
    if cached is not None and cached.reusable_until > now:
        return cached.token, cached.lifetime
    try:
        client_secret = secret_value(tenant_id=tenant_id, name=auth["secret"])
    except (SecretNotFound, SecretUnreadable) as exc:
        raise ToolError(f"the token exchange cannot authenticate its client: {exc}") from None
    form = {"grant_type": GRANT_TYPE, "subject_token_type": ACCESS_TOKEN_TYPE, "resource": auth["audience"]}
    if auth.get("scope"):
        form["scope"] = auth["scope"]
    request = _token_request(caller.base_url, form, auth["client_id"], client_secret)
    setattr(request, INTERNAL_SUBJECT, caller.token_id)
    response = AtomicTokenView.as_view()(request)
    try:
        answer = json.loads(response.content)
    except ValueError:
        answer = {}
    if response.status_code != 200 or not isinstance(answer.get("access_token"), str):
        error = answer.get("error", f"HTTP {response.status_code}")
        description = answer.get("error_description", "")
        raise ToolError(f"the token exchange for {auth['audience']} was refused: {error} {description}".strip())
    given = answer.get("expires_in")
    lifetime = float(given) if isinstance(given, (int, float)) else None
    if lifetime is not None and lifetime > REUSE_MARGIN:
        if len(_exchanged) >= CACHE_LIMIT:
            for stale in [k for k, v in _exchanged.items() if v.reusable_until <= now] or list(_exchanged)[:1]:
                _exchanged.pop(stale, None)
        _exchanged[key] = _Exchanged(answer["access_token"], lifetime, now + lifetime - REUSE_MARGIN)
    return answer["access_token"], lifetime


async def exchange_for_call(tenant_id: int, caller: Caller, auth: dict[str, Any]) -> tuple[str, float | None]:
    return await sync_to_async(exchange_for_call_sync)(tenant_id, caller, auth)
