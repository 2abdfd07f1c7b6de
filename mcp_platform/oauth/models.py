"""The OAuth client model swapped into django-oauth-toolkit (``OAUTH2_PROVIDER_APPLICATION_MODEL``).

A client may be bound to one tenant (then it gets tokens for that tenant's endpoint only); clients that
register themselves (RFC 7591) or describe themselves (client metadata documents) are unbound and every token
they get is still bound to one tenant endpoint. A machine client is a confidential client-credentials client
an admin registered for one tenant; it acts for itself, within the scopes the admin allowed. A client's logo
is kept only as an https URL that is safe to put in an ``<img>``. A confidential client bound to a tenant may be
allowed to exchange people's tokens for tokens to named upstreams (RFC 8693, ``token_exchange``); a token issued so
carries an ``ExchangedToken`` row naming the client as its actor.

A URL-shaped client_id (one with a ``:``) is a client metadata document's URL: only an unbound CIMD client may hold
one, so no client an admin made can stand in for the document's client (the database enforces this). Every other
client gets a generated id.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from oauth2_provider.models import AbstractApplication, ApplicationManager
from oauth2_provider.settings import oauth2_settings

from tenants.models import scope_list_validator

# Never a redirect target, whatever a client registers.
FORBIDDEN_REDIRECT_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
MAX_LOGO_URI_LENGTH = 2048


def safe_logo_uri(uri: object) -> str | None:
    """``uri`` when it can be put in an ``<img src>`` of our pages, else None.

    Only absolute https URLs with a host, no credentials, no whitespace or quotes, at most
    ``MAX_LOGO_URI_LENGTH`` characters: the pages are served over https in production (no mixed content)
    and the pages' Content-Security-Policy allows images from ``https:`` only.
    """
    if not isinstance(uri, str) or not uri or len(uri) > MAX_LOGO_URI_LENGTH:
        return None
    if any(c.isspace() or c in "\"'<>\\`" or ord(c) < 0x20 for c in uri):
        return None
    try:
        parts = urlsplit(uri)
        port = parts.port  # raises on a malformed port
    except ValueError:
        return None
    if parts.scheme != "https" or not parts.hostname or "@" in parts.netloc or port == 0:
        return None
    return uri


def url_shaped(client_id: str) -> bool:
    """Whether ``client_id`` looks like a URL (has a scheme separator). Generated ids are letters and digits."""
    return ":" in client_id


def _scheme_and_host(uri: str) -> tuple[str, str | None]:
    """A redirect URI's scheme (lower case) and host; ``("", None)`` when it does not parse (DOT's check of the
    redirect URIs reports that)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "", None
    return parts.scheme.lower(), parts.hostname


def exchange_target_problem(target: str) -> str | None:
    """What keeps ``target`` from being an upstream a client may exchange tokens for, or None: an absolute URL (an
    RFC 8707 resource indicator: a host, no credentials, no fragment) over https, or plain http to a loopback host."""
    try:
        parts = urlsplit(target)
        port = parts.port  # raises on a malformed port
    except ValueError:
        return f"{target}: not a URL."
    if not parts.hostname or parts.username is not None or "#" in target or port == 0:
        return f"{target}: not an absolute URL with a host (and without credentials or fragment)."
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and parts.hostname in LOOPBACK_HOSTS):
        return None
    return f"{target}: use https (plain http only to a loopback host)."


class TenantApplication(AbstractApplication):
    tenant = models.ForeignKey(
        "tenants.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only tokens for this tenant's endpoint may be issued to the client. Empty: any tenant.",
    )
    logo_uri = models.URLField(
        max_length=MAX_LOGO_URI_LENGTH,
        blank=True,
        help_text="https URL of the client's logo, shown on the consent page (RFC 7591 logo_uri).",
    )
    allowed_scopes = models.CharField(
        max_length=1000,
        blank=True,
        validators=[scope_list_validator],
        help_text="Scopes the client may be granted, separated by spaces. Empty: any scope.",
    )
    exchange_targets = models.TextField(
        blank=True,
        help_text="Upstreams (resource URLs) this client may exchange a person's token for (RFC 8693 token "
        "exchange), separated by spaces or new lines. Empty: the client may not exchange tokens. Only for a "
        "confidential client bound to a tenant.",
    )
    # ID tokens (OpenID Connect) are signed with the platform's RSA key: a public client has no secret to
    # sign with, and every self-registered client is public.
    algorithm = models.CharField(
        max_length=5,
        choices=AbstractApplication.ALGORITHM_TYPES,
        default=AbstractApplication.RS256_ALGORITHM,
        blank=True,
    )

    objects = ApplicationManager()

    class Meta(AbstractApplication.Meta):
        swappable = "OAUTH2_PROVIDER_APPLICATION_MODEL"
        verbose_name = "OAuth client"
        constraints = [
            # django-oauth-toolkit looks a client up by its id before it resolves a metadata document: a row of
            # any other kind holding the document's URL would be used in its place, for every tenant.
            models.CheckConstraint(
                condition=~models.Q(client_id__contains=":")
                | models.Q(registration_source="cimd", tenant__isnull=True),
                name="url_client_ids_are_unbound_cimd_clients",
            ),
        ]

    def natural_key(self) -> tuple[str]:
        return (self.client_id,)

    def exchange_target_list(self) -> list[str]:
        return self.exchange_targets.split()

    @property
    def may_exchange_tokens(self) -> bool:
        """Whether the client may use the token-exchange grant: confidential, bound to a tenant, with targets."""
        return (
            self.client_type == self.CLIENT_CONFIDENTIAL
            and self.tenant_id is not None
            and bool(self.exchange_target_list())
        )

    def get_allowed_schemes(self) -> list[str]:
        """https, http (loopback only, see ``clean``) and the private-use schemes this client registered.

        Native clients receive the code on a custom scheme (``cursor://``, ``vscode://``); DOT's global
        list cannot know them all. The redirect still has to match a registered URI exactly.
        """
        schemes = {"http", "https"}
        for uri in self.redirect_uris.split():
            scheme, _ = _scheme_and_host(uri)
            if scheme and scheme not in FORBIDDEN_REDIRECT_SCHEMES:
                schemes.add(scheme)
        return sorted(schemes)

    def clean(self) -> None:
        """DOT's checks (each redirect URI parses, uses a scheme of ``get_allowed_schemes``, has no fragment),
        plus: plain http only to a loopback host.

        And: exchange targets are well-formed, and only a confidential client bound to a tenant has any.

        And: a URL-shaped client_id belongs to an unbound client metadata document client alone.

        Raises ``ValidationError`` keyed by field.
        """
        if url_shaped(self.client_id or ""):
            if self.registration_source != self.RegistrationSource.CIMD:
                raise ValidationError(
                    {"client_id": "A client_id that is a URL names a client metadata document; use a generated id."}
                )
            if self.tenant_id is not None:
                raise ValidationError(
                    {
                        "tenant": "A client described by its metadata document serves every workspace; it cannot be "
                        "bound to one."
                    }
                )
        problems: list[str] = []
        for uri in self.redirect_uris.split():
            scheme, host = _scheme_and_host(uri)
            if scheme == "http" and host not in LOOPBACK_HOSTS:
                problems.append(f"{uri}: plain http is only allowed to a loopback host; use https.")
        try:
            super().clean()
        except ValidationError as exc:
            if not problems:
                raise
            exc.error_dict.setdefault("redirect_uris", []).extend(ValidationError(p) for p in problems)
            raise
        if problems:
            raise ValidationError({"redirect_uris": problems})
        if self.logo_uri and safe_logo_uri(self.logo_uri) is None:
            raise ValidationError({"logo_uri": "The logo must be an https URL without credentials or quotes."})
        targets = self.exchange_target_list()
        target_problems = [p for p in map(exchange_target_problem, targets) if p]
        if targets and (self.client_type != self.CLIENT_CONFIDENTIAL or self.tenant_id is None):
            target_problems.append("Only a confidential client bound to a tenant may exchange tokens.")
        if target_problems:
            raise ValidationError({"exchange_targets": target_problems})


class MachineClientManager(ApplicationManager):
    def get_queryset(self) -> models.QuerySet[TenantApplication]:
        grant = AbstractApplication.GRANT_CLIENT_CREDENTIALS
        return super().get_queryset().filter(authorization_grant_type=grant, tenant__isnull=False)


class MachineClient(TenantApplication):
    """The admin's view of machine clients (client credentials, bound to a tenant)."""

    objects = MachineClientManager()

    class Meta:
        proxy = True
        verbose_name = "machine client"


class ConsumedAuthorizationCode(models.Model):
    """An authorization code that was exchanged, and the tokens it gave, so that a replay can revoke them
    (RFC 9700 §4.2.1). Only the code's SHA-256 is kept; rows are purged after ``CONSUMED_CODE_RETENTION``."""

    code_checksum = models.CharField(max_length=64, unique=True)
    application = models.ForeignKey(TenantApplication, on_delete=models.CASCADE, related_name="+")
    # Plain values, not foreign keys: the tokens may be rotated or revoked long before a replay comes.
    access_token_id = models.BigIntegerField(null=True)
    token_family = models.UUIDField(null=True)
    consumed = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"Authorization code consumed {self.consumed:%Y-%m-%d %H:%M:%S}"


class ExchangedToken(models.Model):
    """The actor record (RFC 8693 §4.1 ``act``) of an access token issued by token exchange: the token acts for its
    user, and ``actor`` (its application) acts for them. Which grant it was exchanged from is kept so that revoking
    that grant (the person's connected-apps page) revokes it too: the client the person authorized and the tenant
    endpoint that client's token was for.

    A row beside django-oauth-toolkit's access token, not a field on it: the platform does not swap DOT's token
    models, and DOT supports swapping them only before their first migration.
    """

    access_token = models.OneToOneField(
        oauth2_settings.ACCESS_TOKEN_MODEL, on_delete=models.CASCADE, related_name="exchange"
    )
    actor = models.ForeignKey(TenantApplication, on_delete=models.CASCADE, related_name="+")
    # Plain values, not foreign keys: the subject token is rotated or expires long before this row goes.
    subject_token_id = models.BigIntegerField()
    subject_client_id = models.CharField(max_length=255)
    subject_resource = models.CharField(max_length=2048)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["subject_client_id", "subject_resource"], name="exchanged_from_grant")]

    def __str__(self) -> str:
        return f"Exchanged token #{self.access_token_id}"
