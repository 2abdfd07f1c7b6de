"""The OAuth client model swapped into django-oauth-toolkit (``OAUTH2_PROVIDER_APPLICATION_MODEL``).

A client may be bound to one tenant (then it gets tokens for that tenant's endpoint only); clients that
register themselves (RFC 7591) are unbound and every token they get is still bound to one tenant endpoint.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from oauth2_provider.models import AbstractApplication, ApplicationManager

# Never a redirect target, whatever a client registers.
FORBIDDEN_REDIRECT_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class TenantApplication(AbstractApplication):
    tenant = models.ForeignKey(
        "tenants.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only tokens for this tenant's endpoint may be issued to the client. Empty: any tenant.",
    )

    objects = ApplicationManager()

    class Meta(AbstractApplication.Meta):
        swappable = "OAUTH2_PROVIDER_APPLICATION_MODEL"
        verbose_name = "OAuth client"

    def natural_key(self) -> tuple[str]:
        return (self.client_id,)

    def get_allowed_schemes(self) -> list[str]:
        """https, http (loopback only, see ``clean``) and the private-use schemes this client registered.

        Native clients receive the code on a custom scheme (``cursor://``, ``vscode://``); DOT's global
        list cannot know them all. The redirect still has to match a registered URI exactly.
        """
        schemes = {"http", "https"}
        for uri in self.redirect_uris.split():
            scheme = urlsplit(uri).scheme.lower()
            if scheme and scheme not in FORBIDDEN_REDIRECT_SCHEMES:
                schemes.add(scheme)
        return sorted(schemes)

    def clean(self) -> None:
        """DOT's checks, plus: plain http only to a loopback host, and no dangerous schemes.

        Raises ``ValidationError`` keyed by field.
        """
        problems: list[str] = []
        for uri in self.redirect_uris.split():
            parts = urlsplit(uri)
            scheme = parts.scheme.lower()
            if scheme in FORBIDDEN_REDIRECT_SCHEMES:
                problems.append(f"{uri}: the {scheme} scheme cannot receive an authorization code.")
            elif scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
                problems.append(f"{uri}: plain http is only allowed to a loopback host; use https.")
            elif parts.fragment:
                problems.append(f"{uri}: a redirect URI cannot carry a fragment.")
        try:
            super().clean()
        except ValidationError as exc:
            if not problems:
                raise
            exc.error_dict.setdefault("redirect_uris", []).extend(ValidationError(p) for p in problems)
            raise
        if problems:
            raise ValidationError({"redirect_uris": problems})
