"""Security requirements to the HTTP tool's ``auth``: which scheme an operation uses with the imported secret.

The first alternative of the operation's (else the document's) requirements that one secret can satisfy wins:
HTTP bearer, HTTP basic (secret ``user:password``), an API key in a header or the query, OAuth 2.0 client
credentials (secret = client secret; needs a client id), or other OAuth 2.0 / OpenID Connect (secret = token).
Where the tools act as each person, the admin's personal config is that of every tool whose operation does not
say it needs no credentials (``security: []``), and the secret's scheme is what machine clients use.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

from tenants.openapi.document import OpenApiDocument

JSONObject = dict[str, Any]


def _scheme_auth(scheme: Any, scopes: list[str], secret: str, client_id: str | None, base: str) -> JSONObject | None:
    if not isinstance(scheme, dict):
        return None
    kind = scheme.get("type")
    if kind == "http":
        http = str(scheme.get("scheme", "")).lower()
        if http == "bearer":
            return {"secret": secret, "type": "bearer"}
        if http == "basic":
            return {"secret": secret, "type": "basic"}
        return None
    if kind == "apiKey" and scheme.get("in") in ("header", "query") and isinstance(scheme.get("name"), str):
        return {"secret": secret, "type": scheme["in"], "name": scheme["name"]}
    if kind == "oauth2":
        flow = (scheme.get("flows") or {}).get("clientCredentials")
        if isinstance(flow, dict) and isinstance(flow.get("tokenUrl"), str):
            if not client_id:
                return None
            auth: JSONObject = {
                "secret": secret,
                "type": "client_credentials",
                "client_id": client_id,
                "token_url": _joined(base, flow["tokenUrl"]),
            }
            if scopes:
                auth["scope"] = " ".join(scopes)
            return auth
        return {"secret": secret, "type": "bearer"}
    if kind == "openIdConnect":
        return {"secret": secret, "type": "bearer"}
    return None


def auth_for(
    document: OpenApiDocument, operation: JSONObject, options: Any, *, warnings: list[str], key: str
) -> JSONObject | None:
    """The ``auth`` config of one operation's tool, or None (no secret given, or no security needed)."""
    secret = options.secret_name
    if not secret:
        return None
    requirements = operation.get("security", document.data.get("security"))
    if requirements is None:
        # The document declares no security at all (GitHub's does not), yet a secret was given: a bearer token.
        return {"secret": secret, "type": "bearer"}
    if not isinstance(requirements, list) or not requirements:
        return None
    schemes = (document.data.get("components") or {}).get("securitySchemes") or {}
    base = options.base_url or document.location
    optional = False
    for requirement in requirements:
        if not isinstance(requirement, dict):
            continue
        if not requirement:
            optional = True  # an empty alternative: the operation may be called without credentials
            continue
        if len(requirement) != 1:
            continue  # several schemes at once cannot come from one secret
        ((name, scopes),) = requirement.items()
        auth = _scheme_auth(schemes.get(name), list(scopes or []), secret, options.client_id, base)
        if auth is not None:
            return auth
    if optional:
        return None
    warnings.append(f"{key}: none of its security requirements can be met with one secret; no credentials are sent")
    return None


def _joined(base: str, url: str) -> str:
    """``url`` resolved against ``base``; as written when it does not parse (the tool's checks then refuse it)."""
    try:
        return urljoin(base, url)
    except ValueError:
        return url


def personal_auth(
    document: OpenApiDocument, operation: JSONObject, personal: Any, machine: JSONObject | None
) -> JSONObject | None:
    """A tool's ``auth`` when it acts as each person: the admin's personal config, with the operation's shared
    config for machine clients (None: they are refused); None for an operation that needs no credentials."""
    if operation.get("security", document.data.get("security")) == []:
        return None
    auth: JSONObject = dict(personal)
    auth.pop("machine", None)
    if machine is not None:
        auth["machine"] = machine
    return auth
