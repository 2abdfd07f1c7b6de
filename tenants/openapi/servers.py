"""The base URL of an operation: ``--base-url`` if given, else the nearest ``servers`` entry (operation, path
item, document) with its variables' defaults, resolved against the document's own URL when relative."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from tenants.openapi.document import OpenApiDocument, OpenApiError

JSONObject = dict[str, Any]

_VARIABLE = re.compile(r"\{([^{}]+)\}")


def is_web_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:  # brackets that hold no IPv6 address
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _server_url(server: JSONObject) -> str:
    url = str(server.get("url", ""))
    variables = server.get("variables") or {}

    def substitute(found: re.Match[str]) -> str:
        variable = variables.get(found.group(1))
        if not isinstance(variable, dict) or "default" not in variable:
            raise OpenApiError(f"server URL {url!r} uses {{{found.group(1)}}} without a default")
        return str(variable["default"])

    return _VARIABLE.sub(substitute, url)


def base_url_for(document: OpenApiDocument, item: JSONObject, operation: JSONObject, *, override: str | None) -> str:
    """The URL the operation's path is appended to. Raises ``OpenApiError``."""
    if override:
        if not is_web_url(override):
            raise OpenApiError(f"the base URL {override!r} is not an http(s) URL")
        return override
    for level in (operation, item, document.data):
        servers = level.get("servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            url = _server_url(servers[0])
            break
    else:
        url = "/"  # OpenAPI: no servers means one server at "/"
    if is_web_url(url):
        return url
    if is_web_url(document.location):
        try:
            return urljoin(document.location, url)
        except ValueError:
            raise OpenApiError(f"the server URL {url!r} does not parse") from None
    raise OpenApiError(f"the server URL {url!r} is relative and the document was not read from a URL: give a base URL")
