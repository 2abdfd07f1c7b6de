"""The HTTP backend: a tool is one request to a REST API, built from its arguments (RFC 6570 URL, query, headers,
JSON body), authenticated from a tenant secret, sent through the outbound door, and its response made a result.
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
from mcp_platform.conf import platform_settings
from mcp_platform.outbound import MAX_REDIRECTS, OutboundRefused, OutboundResponseTooLarge, outbound_client, read_capped
from mcp_platform.telemetry import metrics, tally
from tenants.backends.http_auth import Credentials, credentials_for, forget_token, redact
from tenants.models import Tool

JSONObject = dict[str, Any]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
EXCERPT_CHARS = 1000

# RFC 6570 §2: an expression is an optional operator and variable specs, each with a prefix or explode modifier.
_VARNAME = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*"
_VARSPEC = rf"{_VARNAME}(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = re.compile(rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}")
_MODIFIER = re.compile(r"(?::[0-9]+|\*)$")


def url_template_problem(template: str) -> str | None:
    """Why ``template`` is not an RFC 6570 (levels 1-4) http(s) URL template, or None."""
    literal = _EXPRESSION.sub("", template)
    if "{" in literal or "}" in literal:
        return "the URL template has a malformed {expression}"
    scheme, _, rest = template.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or rest[0] in "/{":
        return "the URL must start with http:// or https:// and a host name"
    return None


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
    expanded = httpx.URL(URITemplate(config["url"]).expand(variables))
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
            headers[header] = ",".join(map(_scalar, value)) if isinstance(value, list) else _scalar(value)
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


def _result(response: httpx.Response, body: bytes, cut: bool, sensitive: list[str], limit: int) -> JSONObject:
    """A ``CallToolResult`` of the response: JSON objects also as ``structuredContent``; non-2xx as ``isError``."""
    method, where = response.request.method, _where(response.request.url)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    note = {"type": "text", "text": f"[response cut: the body is longer than {limit} bytes; the first {limit} shown]"}
    if not response.is_success:
        excerpt = redact(_text(body, response)[:EXCERPT_CHARS], sensitive)
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        message = f"{status} from {method} {where}" + (f": {excerpt}" if excerpt else "")
        return {"content": [{"type": "text", "text": message}], "isError": True}
    if not body:
        return {"content": [{"type": "text", "text": f"HTTP {response.status_code} {response.reason_phrase}"}]}
    if content_type.startswith("image/") and not cut:
        data = base64.b64encode(body).decode("ascii")
        return {"content": [{"type": "image", "data": data, "mimeType": content_type}]}
    text = redact(_text(body, response), sensitive)
    result: JSONObject = {"content": [{"type": "text", "text": text}]}
    if cut:
        result["content"].append(note)
    elif content_type == "application/json" or content_type.endswith("+json"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            result["structuredContent"] = parsed
    return result


async def tool_invoke(tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
    """Make the tool's request and return its result. Raises ``ToolError`` (an isError result) when the request
    cannot be made: a refused address, a timeout, a missing secret, a failed connection.

    The tool's timeout bounds the whole call (token fetch, connection, redirects, the full body), not each read:
    an API that drips a byte now and then (or an endless event stream) must not hold a worker for ever."""
    config = tool.config
    method, url, params, headers = build_request(config, arguments)
    timeout = _timeout(config)
    with anyio.move_on_after(timeout.read or 0) as deadline:
        return await _invoke(tool, config, arguments, (method, url, params, headers), timeout)
    assert deadline.cancelled_caught
    raise ToolError(f"{method} {_where(httpx.URL(url))} timed out after {timeout.read:g} s")


async def _invoke(
    tool: Tool,
    config: JSONObject,
    arguments: JSONObject,
    built: tuple[str, str, list[tuple[str, str]], dict[str, str]],
    timeout: httpx.Timeout,
) -> JSONObject:
    method, url, params, headers = built
    has_body, body = _body(config, arguments)
    limit = platform_settings.HTTP_TOOL_MAX_RESULT_BYTES
    client = outbound_client(tenant_id=tool.tenant_id)
    for attempt in range(2):
        credentials = await credentials_for(
            tenant_id=tool.tenant_id, tool_name=tool.name, auth=config.get("auth"), timeout=timeout
        )
        request = client.build_request(
            method,
            url,
            params=[*params, *credentials.params],
            headers={**headers, **credentials.headers},
            json=body if has_body else None,
            timeout=timeout,
        )
        shown = f"{method} {_where(request.url)}"
        try:
            response, data, cut = await _measured_send(tool, client, request, credentials, limit)
        except OutboundRefused as exc:
            raise ToolError(f"{shown} was not sent: {exc}") from None
        except httpx.ConnectTimeout:
            raise ToolError(f"{shown} timed out after {timeout.connect} s connecting") from None
        except httpx.TimeoutException:
            raise ToolError(f"{shown} timed out after {timeout.read} s waiting for the response") from None
        except httpx.HTTPError as exc:
            reason = redact(str(exc), credentials.sensitive) or type(exc).__name__
            raise ToolError(f"{shown} failed: {reason}") from None
        # A cached client-credentials token the API no longer accepts (revoked early): fetch one more, once.
        if response.status_code == 401 and credentials.cached_token_key is not None and attempt == 0:
            forget_token(credentials.cached_token_key)
            continue
        return _result(response, data, cut, credentials.sensitive, limit)
    raise AssertionError("unreachable: the second attempt always returns")
