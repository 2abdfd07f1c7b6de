"""The platform's own front door: the landing page at ``/`` and ``/favicon.ico``.

The landing page says what the platform is and points to the admin and the documentation. It names no tenant: an
anonymous visitor learns nothing of who is hosted here.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.http import require_safe

from mcp_platform.oauth.headers import apply_page_policy


@require_safe
def landing_page(request: HttpRequest) -> HttpResponse:
    response = render(request, "landing.html")
    apply_page_policy(response)
    return response


@require_safe
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico before they read a page's icon link: send them to the icon itself."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
