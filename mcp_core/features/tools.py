"""Tools: ``tools/list`` and ``tools/call`` with input validation, error results and output schemas."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from mcp_core.catalog import ToolDefinition
from mcp_core.content import error_result, result_for_version, tool_result
from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, InvalidParams, McpError, ToolError
from mcp_core.features.listing import list_page
from mcp_core.standard_headers import check_param_headers
from mcp_core.versions import V2025_03_26, V2025_06_18, V2025_11_25, at_least

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]

# Optional tool fields and the revision that introduced each.
_TOOL_FIELD_SINCE = {
    "annotations": V2025_03_26,
    "title": V2025_06_18,
    "outputSchema": V2025_06_18,
    "icons": V2025_11_25,
    "execution": V2025_11_25,
}


def tool_for_version(tool: JSONObject, version: str) -> JSONObject:
    """A tool definition without the fields ``version`` predates."""
    if all(at_least(version, since) for field, since in _TOOL_FIELD_SINCE.items() if field in tool):
        return tool
    return {k: v for k, v in tool.items() if k not in _TOOL_FIELD_SINCE or at_least(version, _TOOL_FIELD_SINCE[k])}


@lru_cache(maxsize=1024)
def _validator(schema_json: bytes) -> Draft202012Validator:
    return Draft202012Validator(orjson.loads(schema_json))


def _compiled(schema: JSONObject) -> Draft202012Validator | SchemaError:
    try:
        return _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    except SchemaError as exc:
        return exc


def validation_errors(
    schema: JSONObject, instance: Any, tool: ToolDefinition | None = None, which: str = ""
) -> list[str]:
    """Human-readable reasons ``instance`` does not conform to ``schema`` (empty when it does).

    With ``tool``, the compiled schema is remembered on the definition under ``which`` (see ToolDefinition).
    """
    if tool is None:
        validator = _compiled(schema)
    else:
        validator = tool.validators.get(which) or tool.validators.setdefault(which, _compiled(schema))
    if isinstance(validator, SchemaError):
        return [f"the tool's schema is invalid: {validator.message}"]
    messages = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        messages.append(f"{where}: {error.message}")
    return messages


async def list_tools(params: JSONObject | None, env: Env) -> JSONObject:
    result = await list_page(params, env.catalog.list_tools, key="tools", page_size=env.page_size)
    result["tools"] = [tool_for_version(t, env.version) for t in result["tools"]]
    return result


async def call_tool(params: JSONObject | None, env: Env) -> JSONObject:
    """Run a tool. Unknown tools are protocol errors; everything the tool itself gets wrong is an isError result.

    Raises InvalidParams for a missing/unknown name or non-object arguments, HeaderMismatch (stateless era) when an
    ``Mcp-Param-*`` header disagrees with the arguments, and MissingClientCapability (stateless era) when the tool
    needs a capability the client did not declare.
    """
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidParams("tools/call needs a tool name")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("tools/call arguments must be an object")
    tool = await env.catalog.get_tool(name)
    if tool is None:
        raise InvalidParams(f"Unknown tool: {name}", data={"name": name})

    input_schema = tool.wire.get("inputSchema") or {"type": "object"}
    if env.stateless and env.headers is not None:
        check_param_headers(input_schema=input_schema, arguments=arguments, headers=env.headers)
    problems = validation_errors(input_schema, arguments, tool, "input")
    if problems:
        return error_result("Invalid arguments for tool " + name + ": " + "; ".join(problems))

    try:
        value = await env.catalog.invoke_tool(tool, arguments, env.request_context(arguments))
    except ToolError as exc:
        return error_result(str(exc))
    except ClientRequestFailed as exc:
        return error_result(f"The tool needed something from the client that failed: {exc}")
    except McpError:
        raise
    except Exception:
        logger.exception("tool %s failed", name)
        return error_result(f"Tool {name} failed with an internal error")

    result = tool_result(value)
    output_schema = tool.wire.get("outputSchema")
    if output_schema and not result.get("isError"):
        structured = result.get("structuredContent")
        if structured is None:
            return error_result(f"Tool {name} returned no structuredContent although it declares an outputSchema")
        problems = validation_errors(output_schema, structured, tool, "output")
        if problems:
            return error_result(f"Tool {name} returned output not matching its outputSchema: " + "; ".join(problems))
    return result_for_version(result, env.version)
