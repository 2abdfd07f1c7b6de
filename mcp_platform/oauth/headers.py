"""Security headers of the pages people see (sign-in, consent, connected apps).

No page runs script, so the policy allows none; styles and images come from this origin (and logos from
any https host). Pages cannot be framed (clickjacking a consent button), are never cached, and forms may
only go to this origin, plus, on the consent page, to the client's registered redirect target.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.http import HttpResponseBase
from django.utils.cache import add_never_cache_headers

View = TypeVar("View", bound=Callable[..., HttpResponseBase])

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST_PORT = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]{1,5})?")


def form_target(redirect_uri: str) -> str | None:
    """The CSP source expression for a redirect URI (``http://127.0.0.1:3030``, ``cursor:``), or None.

    Browsers check ``form-action`` against the redirect that answers a form post, so the consent page
    must allow the client's target. Anything that does not parse cleanly is left out rather than escaped.
    """
    try:
        parts = urlsplit(redirect_uri.lower())
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return None
    if not _SCHEME.fullmatch(parts.scheme):
        return None
    if parts.scheme in ("http", "https"):
        netloc = parts.netloc.rpartition("@")[2]
        return f"{parts.scheme}://{netloc}" if _HOST_PORT.fullmatch(netloc) else None
    return f"{parts.scheme}:"


def content_security_policy(form_targets: Iterable[str] = ()) -> str:
    form_action = " ".join(["'self'", *form_targets])
    return (
        "default-src 'none'; style-src 'self'; img-src 'self' https:; "
        f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
    )


def apply_page_policy(response: HttpResponseBase, form_targets: Iterable[str] = ()) -> HttpResponseBase:
    response["Content-Security-Policy"] = content_security_policy(form_targets)
    response["X-Frame-Options"] = "DENY"
    add_never_cache_headers(response)
    return response


def page_policy(view: View) -> View:
    """Decorate a view function with the pages' security headers."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponseBase:
        return apply_page_policy(view(*args, **kwargs))

    return wrapped  # type: ignore[return-value]
