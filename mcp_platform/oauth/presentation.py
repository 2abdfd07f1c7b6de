"""How an OAuth client presents itself to the person asked to trust it: name, logo, origin, where it sends you.

Everything here is client-supplied and unverified, so it is reduced to what is safe to show: an https logo
URL (``models.safe_logo_uri``), a plain-text name and its initial, and how the client was registered.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_platform.oauth.headers import form_target
from mcp_platform.oauth.models import TenantApplication, safe_logo_uri

UNNAMED = "Unnamed app"


def registered_by(application: TenantApplication) -> str:
    """How the client came to be known here, in words for the consent page."""
    source = application.registration_source
    if source == TenantApplication.RegistrationSource.DCR:
        return "Registered itself automatically (dynamic registration). Its name and logo are not verified."
    if source == TenantApplication.RegistrationSource.CIMD:
        return f"Described by its metadata document at {application.client_id}."
    if application.tenant is not None:
        return f"Registered by an administrator of {application.tenant.name}."
    return "Registered by an administrator of this platform."


def redirect_host(redirect_uri: str) -> str:
    """The host a person is sent back to (``127.0.0.1:3030``), or the scheme of a native app (``cursor:``): where
    the consent form may lead (``headers.form_target``); the URI itself when it does not parse cleanly."""
    target = form_target(redirect_uri)
    if target is None:
        return redirect_uri
    return target.partition("://")[2] or target


@dataclass(frozen=True)
class ClientFace:
    """What the pages show of a client."""

    name: str
    initial: str
    logo_uri: str | None
    registered_by: str
    verified_name: bool


def client_face(application: TenantApplication) -> ClientFace:
    name = application.name.strip() or UNNAMED
    initial = next((c.upper() for c in name if c.isalnum()), "?")
    return ClientFace(
        name=name,
        initial=initial,
        logo_uri=safe_logo_uri(application.logo_uri),
        registered_by=registered_by(application),
        verified_name=application.registration_source == TenantApplication.RegistrationSource.MANUAL,
    )
