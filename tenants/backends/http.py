"""The HTTP backend: a tool is one request to a REST API, built from its arguments (RFC 6570 URL, query, headers,
JSON body), authenticated from a tenant secret, sent through the outbound door, and its response made a result.
The backend serves tools only; its config is checked by ``tool_config_errors``.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import anyio
import httpx
from uritemplate import URITemplate

from mcp_core.context import ToolContext
from mcp_core.errors import ToolError
from mcp_infra.conf import platform_settings
from mcp_infra.outbound import MAX_REDIRECTS, OutboundRefused, OutboundResponseTooLarge, outbound_client, read_capped
from mcp_infra.telemetry import metrics, tally
from tenants.backends.base import TOOLS, CatalogBackend, Errors
from tenants.backends.redaction import SecretRedactor
from tenants.connections.credentials import call_credentials
from tenants.models import Backend, Tool
from tenants.outbound_auth import (
    HEADER_NAME,
    Credentials,
    auth_errors,
    auth_secret_names,
    forget_token,
    header_value_problem,
)

JSONObject = dict[str, Any]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
HTTP_TOOL_KEYS = frozenset({"method", "url", "query", "headers", "body", "static_headers", "auth", "timeout"})
# Headers the request itself owns: a tool config setting them would confuse the connection, not the API.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "upgrade", "te"})
MAX_HTTP_TIMEOUT = 300
EXCERPT_CHARS = 1000

# RFC 6570 §2: an expression is an optional operator and variable specs, each with a prefix or explode modifier.
_VARNAME = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*"
_VARSPEC = rf"{_VARNAME}(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = re.compile(rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}")
_MODIFIER = re.compile(r"(?::[0-9]+|\*)$")


def url_template_problem(template: str) -> str | None:
    """Why ``template`` is not an RFC 6570 (levels 1-4) http(s) URL template with a literal origin, or None."""
    literal = _EXPRESSION.sub("", template)
    if "{" in literal or "}" in literal:
        return "the URL template has a malformed {expression}"
    try:
        url_template_origin(template)
    except ValueError as exc:
        return str(exc)
    return None


def url_template_origin(template: str) -> httpx.URL:
    """The origin (``scheme://host[:port]``) ``template`` spells out before any expression.

    Arguments must never choose where a request (and the tool's credential) goes: an expression right after the
    host (``https://api.example{+path}`` with ``path="@other.example/x"``) would make the host user information.
    Only ``{/...}``, ``{?...}`` and ``{#...}`` may follow the host directly: what they expand to starts with that
    character. Raises ``ValueError`` saying what is wrong.
    """
    scheme, separator, rest = template.partition("://")
    if not separator or scheme.lower() not in ("http", "https") or not rest or rest[0] in "/?#{":
        raise ValueError("the URL must start with http:// or https:// and a host name")
    end = next((i for i, c in enumerate(rest) if c in "/?#{"), len(rest))
    authority, after = rest[:end], rest[end:]
    if after.startswith("{") and after[1:2] not in ("/", "?", "#"):
        raise ValueError(
            "the origin (scheme://host[:port]) must be written out in full: an {expression} right after the host "
            "could change where the request goes; put a / between the host and the expression"
        )
    if "@" in authority:
        raise ValueError('the URL must not carry a user name or password (user@host): use "auth" with a secret')
    port = authority.rpartition("]")[2] if authority.startswith("[") else authority
    _, colon, digits = port.rpartition(":")
    if colon and digits and (not digits.isdigit() or not 0 < int(digits) <= 65535):
        raise ValueError(f"the URL's port {digits!r} is not a number from 1 to 65535")
    try:
        origin = httpx.URL(f"{scheme}://{authority}")
    except httpx.InvalidURL as exc:
        raise ValueError(f"the URL's host is not valid: {exc}") from None
    if not origin.host:
        raise ValueError("the URL must start with http:// or https:// and a host name")
    return origin


def _same_origin(url: httpx.URL, origin: httpx.URL) -> bool:
    return (url.scheme, url.host, url.port) == (origin.scheme, origin.host, origin.port) and not url.userinfo


def expand_url(template: str, variables: JSONObject) -> httpx.URL:
    """``template`` expanded with ``variables``, on the template's own origin.

    Raises ``ToolError`` (naming the origin, never an argument or a secret) when the template's origin is not
    literal (a tool saved before the rule) or the expansion would leave it: another host, port or scheme, user
    information, or a fragment the template did not have (it would hide the rest of the URL).
    """
    try:
        origin = url_template_origin(template)
    except ValueError as exc:
        raise ToolError(f"the tool's URL template cannot be used: {exc}") from None
    where = f"{origin.scheme}://{origin.netloc.decode()}"
    try:
        expanded = httpx.URL(URITemplate(template).expand(variables))
    except httpx.InvalidURL:
        raise ToolError(f"refused: the arguments do not make a valid URL on {where}; nothing was sent") from None
    if not _same_origin(expanded, origin) or (expanded.fragment and "#" not in template):
        raise ToolError(f"refused: the arguments would send the request elsewhere than {where}; nothing was sent")
    return expanded


def url_template_variables(template: str) -> list[str]:
    """The variable names of ``template``, in order."""
    names: list[str] = []
    for expression in _EXPRESSION.findall(template):
        for spec in expression.strip("{}").lstrip("+#./;?&").split(","):
            name = _MODIFIER.sub("", spec)
            if name not in names:
                names.append(name)
    return names


def _scalar(value: Any) -> str:
    # JSON's spelling, not Python's: true, not True; 1.5, not Decimal.
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _template_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_scalar(v) for v in value]
    if isinstance(value, dict):
        return {k: _scalar(v) for k, v in value.items()}
    return _scalar(value)


def _present(arguments: JSONObject, name: str) -> bool:
    return name in arguments and arguments[name] is not None


def build_request(config: JSONObject, arguments: JSONObject) -> tuple[str, str, list[tuple[str, str]], dict[str, str]]:
    """(method, URL, query parameters, headers) of a call; the URL carries what its template expands to."""
    variables = {
        name: _template_value(arguments[name])
        for name in url_template_variables(config["url"])
        if _present(arguments, name)
    }
    expanded = expand_url(config["url"], variables)
    # The template's own query ({?a,b}) first, then the configured parameters: httpx would replace, not merge.
    params: list[tuple[str, str]] = list(expanded.params.multi_items())
    url = str(expanded.copy_with(query=None))
    for parameter, argument in (config.get("query") or {}).items():
        if _present(arguments, argument):
            value = arguments[argument]
            params.extend((parameter, _scalar(v)) for v in (value if isinstance(value, list) else [value]))
    headers = {"Accept": "application/json, */*;q=0.5", **(config.get("static_headers") or {})}
    for header, argument in (config.get("headers") or {}).items():
        if _present(arguments, argument):
            value = arguments[argument]
            text = ",".join(map(_scalar, value)) if isinstance(value, list) else _scalar(value)
            if (problem := header_value_problem(text)) is not None:
                raise ToolError(f"the argument {argument!r} cannot be sent as the header {header}: {problem}")
            headers[header] = text
    return config.get("method", "GET").upper(), url, params, headers


def _body(config: JSONObject, arguments: JSONObject) -> tuple[bool, Any]:
    body = config.get("body")
    if not body:
        return False, None
    if "argument" in body:
        name = body["argument"]
        return _present(arguments, name), arguments.get(name)
    return True, {name: arguments[name] for name in body["arguments"] if name in arguments}


def _timeout(config: JSONObject) -> httpx.Timeout:
    seconds = float(config.get("timeout") or platform_settings.OUTBOUND_READ_TIMEOUT)
    return httpx.Timeout(seconds, connect=min(seconds, platform_settings.OUTBOUND_CONNECT_TIMEOUT))


def _where(url: httpx.URL) -> str:
    # No query: an API key may travel there.
    return f"{url.scheme}://{url.netloc.decode()}{url.path}"


async def _measured_send(
    tool: Tool, client: httpx.AsyncClient, request: httpx.Request, credentials: Credentials, limit: int
) -> tuple[httpx.Response, bytes, bool]:
    """``_send``, counted and timed for ``/metrics`` by final status class (``error`` when no response came)."""
    started = time.perf_counter()
    tenant = metrics.tenant_label(tool)
    try:
        sent = await _send(client, request, credentials, limit)
    except BaseException:
        tally.http_tool_observe(tenant=tenant, status=None, started=started)
        raise
    tally.http_tool_observe(tenant=tenant, status=sent[0].status_code, started=started)
    return sent


async def _send(
    client: httpx.AsyncClient, request: httpx.Request, credentials: Credentials, limit: int
) -> tuple[httpx.Response, bytes, bool]:
    """Send, following redirects by hand: a credential header (an API key) must not follow a redirect to another
    origin (httpx itself only drops ``Authorization``). (final response, body up to ``limit``, cut)."""
    origin = request.url.copy_with(path="/", query=None, fragment=None)
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.send(request, stream=True, follow_redirects=False)
        if not response.is_redirect or response.next_request is None:
            try:
                return response, await read_capped(response, limit), False
            except OutboundResponseTooLarge as exc:
                return response, exc.partial, True
        await response.aclose()
        request = response.next_request
        if request.url.copy_with(path="/", query=None, fragment=None) != origin:
            for name in credentials.secret_headers:
                request.headers.pop(name, None)
    raise ToolError(f"more than {MAX_REDIRECTS} redirects from {_where(request.url)}")


def _text(body: bytes, response: httpx.Response) -> str:
    return body.decode(response.encoding or "utf-8", errors="replace")


def _result(response: httpx.Response, body: bytes, cut: bool, redactor: SecretRedactor, limit: int) -> JSONObject:
    """A ``CallToolResult`` of the response: JSON objects also as ``structuredContent``; non-2xx as ``isError``.

    ``body`` may run past ``limit`` (by the redactor's reach): a secret crossing the cut is then seen whole.
    Everything shown is redacted before it is cut, and ``structuredContent`` is parsed from the whole body and
    redacted string by string, so it stays valid JSON.
    """
    method, where = response.request.method, _where(response.request.url)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    cut = cut or len(body) > limit
    whole = _text(body, response)
    shown_chars = len(_text(body[:limit], response)) if cut else len(whole)
    note = {"type": "text", "text": f"[response cut: the body is longer than {limit} bytes; the first {limit} shown]"}
    if not response.is_success:
        excerpt = redactor.prefix(whole, min(shown_chars, EXCERPT_CHARS))
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        message = f"{status} from {method} {where}" + (f": {excerpt}" if excerpt else "")
        return {"content": [{"type": "text", "text": message}], "isError": True}
    if not body:
        return {"content": [{"type": "text", "text": f"HTTP {response.status_code} {response.reason_phrase}"}]}
    if content_type.startswith("image/") and not cut:
        data = base64.b64encode(body).decode("ascii")
        return {"content": [{"type": "image", "data": data, "mimeType": content_type}]}
    result: JSONObject = {"content": [{"type": "text", "text": redactor.prefix(whole, shown_chars)}]}
    if cut:
        result["content"].append(note)
    elif content_type == "application/json" or content_type.endswith("+json"):
        try:
            parsed = json.loads(whole)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            result["structuredContent"] = redactor.value(parsed)
    return result


async def tool_invoke(tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
    """Make the tool's request and return its result. Raises ``ToolError`` (an isError result) when the request
    cannot be made: arguments that would leave the URL's origin or cannot be a header, a refused address, a
    timeout, a missing secret or one that cannot be sent, a failed connection.

    The tool's timeout bounds the whole call (token fetch, connection, redirects, the full body), not each read:
    an API that drips a byte now and then (or an endless event stream) must not hold a worker for ever."""
    config = tool.config
    method, url, params, headers = build_request(config, arguments)
    timeout = _timeout(config)
    with anyio.move_on_after(timeout.read or 0) as deadline:
        return await _invoke(tool, config, arguments, (method, url, params, headers), timeout, ctx)
    assert deadline.cancelled_caught
    raise ToolError(f"{method} {_where(httpx.URL(url))} timed out after {timeout.read:g} s")


async def _invoke(
    tool: Tool,
    config: JSONObject,
    arguments: JSONObject,
    built: tuple[str, str, list[tuple[str, str]], dict[str, str]],
    timeout: httpx.Timeout,
    ctx: ToolContext,
) -> JSONObject:
    method, url, params, headers = built
    has_body, body = _body(config, arguments)
    limit = platform_settings.HTTP_TOOL_MAX_RESULT_BYTES
    client = outbound_client(tenant_id=tool.tenant_id)
    for attempt in range(2):
        credentials = await call_credentials(
            tenant_id=tool.tenant_id,
            item=tool,
            name=tool.name,
            title=f"The tool {tool.name}",
            auth=config.get("auth"),
            ctx=ctx,
            timeout=timeout,
        )
        redactor = SecretRedactor(credentials.sensitive)
        try:
            request = client.build_request(
                method,
                url,
                params=[*params, *credentials.params],
                headers={**headers, **credentials.headers},
                json=body if has_body else None,
                timeout=timeout,
            )
        except (httpx.InvalidURL, UnicodeEncodeError):
            # Arguments and secrets were checked before; this is what is left (a value httpx will not encode).
            raise ToolError(f"{method} {_where(httpx.URL(url))} could not be built from these arguments") from None
        shown = f"{method} {_where(request.url)}"
        try:
            response, data, cut = await _measured_send(tool, client, request, credentials, limit + redactor.reach)
        except OutboundRefused as exc:
            raise ToolError(f"{shown} was not sent: {exc}") from None
        except httpx.ConnectTimeout:
            raise ToolError(f"{shown} timed out after {timeout.connect} s connecting") from None
        except httpx.TimeoutException:
            raise ToolError(f"{shown} timed out after {timeout.read} s waiting for the response") from None
        except httpx.HTTPError as exc:
            reason = redactor.text(str(exc)) or type(exc).__name__
            raise ToolError(f"{shown} failed: {reason}") from None
        # A cached client-credentials token the API no longer accepts (revoked early): fetch one more, once.
        if response.status_code == 401 and credentials.cached_token_key is not None and attempt == 0:
            forget_token(credentials.cached_token_key)
            continue
        return _result(response, data, cut, redactor, limit)
    raise AssertionError("unreachable: the second attempt always returns")


def _string_map_errors(value: Any, what: str, *, headers: bool, literal_values: bool = False) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return [f'"{what}" must be an object of strings.']
    problems = []
    for name, item in value.items():
        if headers and (not HEADER_NAME.match(name) or name.lower() in RESERVED_HEADERS):
            problems.append(f'"{what}": {name!r} is not a header a tool may set.')
        if literal_values and ("\r" in item or "\n" in item):
            problems.append(f'"{what}": the value of {name!r} has a line break.')
        elif literal_values and (problem := header_value_problem(item)) is not None:
            problems.append(f'"{what}": the value of {name!r} cannot be sent as a header: {problem}.')
        if not headers and not name:
            problems.append(f'"{what}" has an empty parameter name.')
    return problems


def tool_config_errors(config: Any, input_schema: Any) -> list[str]:
    """Why ``config`` is not an HTTP tool's config (the shape in docs: method, url, query, headers, body, auth)."""
    if not isinstance(config, dict):
        return ["An HTTP tool's config must be an object."]
    problems = [f"Unknown key {key!r} in an HTTP tool's config." for key in sorted(set(config) - HTTP_TOOL_KEYS)]
    method = config.get("method", "GET")
    if method not in METHODS:
        problems.append(f'"method" must be one of {", ".join(METHODS)}.')
    url = config.get("url")
    used: list[str] = []
    if not isinstance(url, str) or not url:
        problems.append('An HTTP tool needs "url": an RFC 6570 template such as "https://api.example/pets/{id}".')
    elif (problem := url_template_problem(url)) is not None:
        problems.append(f'"url": {problem}.')
    else:
        used += url_template_variables(url)
    for key in ("query", "headers"):
        problems += _string_map_errors(config.get(key), key, headers=key == "headers")
        if isinstance(config.get(key), dict):
            used += [v for v in config[key].values() if isinstance(v, str)]
    problems += _string_map_errors(config.get("static_headers"), "static_headers", headers=True, literal_values=True)
    body = config.get("body")
    if body is not None:
        if isinstance(body, dict) and set(body) == {"argument"} and isinstance(body["argument"], str):
            used.append(body["argument"])
        elif (
            isinstance(body, dict)
            and set(body) == {"arguments"}
            and isinstance(body["arguments"], list)
            and all(isinstance(n, str) for n in body["arguments"])
        ):
            used += body["arguments"]
        else:
            problems.append('"body" must be null, {"argument": "<name>"} or {"arguments": ["<name>", ...]}.')
        if method in ("GET", "HEAD"):
            problems.append(f'A {method} request has no body: remove "body" or change the method.')
    problems += auth_errors(config.get("auth"))
    timeout = config.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_HTTP_TIMEOUT
    ):
        problems.append(f'"timeout" must be a number of seconds above 0 and at most {MAX_HTTP_TIMEOUT}.')
    declared = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if isinstance(declared, dict):
        problems += [
            f"{name!r} is used by the request but is not a property of the input schema."
            for name in dict.fromkeys(used)
            if name not in declared
        ]
    return problems


class HttpBackend(CatalogBackend):
    """A tool is one request to a REST API (written by hand, or imported from an OpenAPI document)."""

    choice = Backend.HTTP
    title = "HTTP"
    serves = (TOOLS,)
    admin_form = "tenants.admin.backend_forms.http.HttpSectionForm"

    async def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
        return await tool_invoke(tool, arguments, ctx)

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        return {"config": tool_config_errors(tool.config, tool.input_schema)}

    def secret_names(self, config: Any) -> list[str]:
        return auth_secret_names(config.get("auth") if isinstance(config, dict) else None)
