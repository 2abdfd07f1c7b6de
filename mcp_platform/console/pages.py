"""The console's pages on the tool admin: the page with the tool's form and the admin's latest runs of it, the run
(an event stream answering a POST), the page's answers and cancel button, and one run of the history (its result,
its JSON-RPC exchange and the call as code to copy). Another tenant's tool is a 404 on each, as on the tool's own
page, and a run of another admin is a 404.

The tool admin serves them: ``ConsoleConfig.ready()`` adds ``CONSOLE_PAGE`` to ``tenants.admin.pages.tool_pages``."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse

from mcp_infra.addresses import MCP, base_url_from_request, endpoint_url
from mcp_platform.console.codegen import CallToCopy, code_to_copy
from mcp_platform.console.history import console_run_get, console_runs, rerun_arguments, run_summary
from mcp_platform.console.limits import CONSOLE_CLIENT_ID, console_limit
from mcp_platform.console.runs import (
    MAX_ANSWER_BYTES,
    MAX_ARGUMENT_BYTES,
    ConsoleCall,
    ConsoleRun,
    console_answer,
    console_cancel,
    new_run_id,
)
from tenants.admin.pages import ObjectPage
from tenants.models import TaskSupport, Tool

RUN_ID_MAX_LENGTH = 64


class ConsoleRequestError(Exception):
    """A console POST the page should not have sent: answered with ``status`` and the message as JSON."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _json_body(request: HttpRequest, limit: int) -> dict[str, Any]:
    """The POST's JSON object. Raises ConsoleRequestError (413 over ``limit`` bytes, 400 for anything but an object)."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > limit or len(request.body) > limit:
        raise ConsoleRequestError(f"The request is larger than {limit // 1024} KiB.", 413)
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise ConsoleRequestError("The request is not JSON.") from None
    if not isinstance(data, dict):
        raise ConsoleRequestError("The request is not a JSON object.")
    return data


def _user_id(request: HttpRequest) -> int:
    """The signed-in person's id (the admin site let only people in)."""
    user_id = request.user.pk
    assert user_id is not None
    return int(user_id)


def _run_id(data: dict[str, Any]) -> str:
    run_id = data.get("runId")
    if not isinstance(run_id, str) or not run_id or len(run_id) > RUN_ID_MAX_LENGTH:
        raise ConsoleRequestError("runId is missing.")
    return run_id


class ToolConsole:
    """The console of the tool admin ``model_admin``: owners and admins of the tool's tenant (and platform staff)
    run the tool; the admin decides who may, as on the tool's own page."""

    def __init__(self, model_admin: admin.ModelAdmin[Any]) -> None:
        self.model_admin = model_admin

    def get_urls(self) -> list[URLPattern | URLResolver]:
        wrap = self.model_admin.admin_site.admin_view
        return [
            path("<path:object_id>/console/", wrap(self.console_view), name="tenants_tool_console"),
            path("<path:object_id>/console/run/", wrap(self.console_run_view), name="tenants_tool_console_run"),
            path(
                "<path:object_id>/console/answer/", wrap(self.console_answer_view), name="tenants_tool_console_answer"
            ),
            path(
                "<path:object_id>/console/cancel/", wrap(self.console_cancel_view), name="tenants_tool_console_cancel"
            ),
            path(
                "<path:object_id>/console/runs/<int:run_pk>/",
                wrap(self.console_run_detail_view),
                name="tenants_tool_console_run_detail",
            ),
        ]

    def _console_tool(self, request: HttpRequest, object_id: str) -> Tool:
        """The tool, if the person may run it. Raises Http404 (another tenant's tool, or none) or PermissionDenied."""
        tool: Tool | None = self.model_admin.get_object(request, object_id)
        if tool is None:
            raise Http404("No such tool.")
        if not self.model_admin.has_change_permission(request, tool):
            raise PermissionDenied
        return tool

    def console_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        tool = self._console_tool(request, object_id)
        urls = {
            name: reverse(f"admin:tenants_tool_console_{name}", args=[tool.pk]) for name in ("run", "answer", "cancel")
        }
        # The page adds a run's id to this prefix to open it.
        urls["runs"] = reverse("admin:tenants_tool_console_run_detail", args=[tool.pk, 0]).removesuffix("0/")
        history = [run_summary(record) for record in console_runs(tool=tool, user_id=_user_id(request))]
        context = {
            **self.model_admin.admin_site.each_context(request),
            "title": f"Run {tool.name}",
            "opts": self.model_admin.opts,
            "original": tool,
            "tool": tool,
            "console": {
                "tool": tool.name,
                "inputSchema": tool.input_schema or {"type": "object"},
                "taskSupport": tool.task_support,
                "urls": urls,
                "maxArgumentBytes": MAX_ARGUMENT_BYTES,
                "history": history,
            },
            "console_limit": console_limit(tool.tenant),
            "console_client_id": CONSOLE_CLIENT_ID,
            "task_optional": tool.task_support == TaskSupport.OPTIONAL,
            "task_required": tool.task_support == TaskSupport.REQUIRED,
        }
        return TemplateResponse(request, "admin/tenants/tool/console.html", context)

    def console_run_detail_view(self, request: HttpRequest, object_id: str, run_pk: int) -> HttpResponse:
        """One of the admin's runs of the tool, as JSON: its summary, result or error, exchange, and code to copy."""
        tool = self._console_tool(request, object_id)
        if request.method != "GET":
            return HttpResponseNotAllowed(["GET"])
        record = console_run_get(tool=tool, user_id=_user_id(request), pk=run_pk)
        if record is None:
            raise Http404("No such run.")
        call = CallToCopy(
            endpoint=endpoint_url(base_url_from_request(request), tool.tenant.slug, MCP),
            tool=tool.name,
            arguments=rerun_arguments(record.arguments),
            needs_token=tool.tenant.requires_authorization,
        )
        detail = {
            **run_summary(record),
            "runId": record.run_id,
            "taskId": record.task_id,
            "result": record.result,
            "error": record.error,
            "exchange": record.exchange,
            "code": code_to_copy(call),
        }
        response = JsonResponse(detail)
        response["Cache-Control"] = "no-store"
        return response

    def console_run_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        return self._posted(self._console_run, request, object_id)

    def console_answer_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        return self._posted(self._console_answer, request, object_id)

    def console_cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        return self._posted(self._console_cancel, request, object_id)

    def _posted(self, handler: Any, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """The tool first (another tenant's is a 404 whatever the method), then the POST, then its errors as JSON."""
        tool = self._console_tool(request, object_id)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        try:
            response: HttpResponseBase = handler(request, tool)
        except ConsoleRequestError as exc:
            return JsonResponse({"error": str(exc)}, status=exc.status)
        return response

    def _console_run(self, request: HttpRequest, tool: Tool) -> HttpResponseBase:
        data = _json_body(request, MAX_ARGUMENT_BYTES)
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ConsoleRequestError("arguments must be a JSON object.")
        support = TaskSupport(tool.task_support)
        as_task = support is TaskSupport.REQUIRED or (support is TaskSupport.OPTIONAL and data.get("asTask") is True)
        call = ConsoleCall(
            tool=tool,
            user_id=_user_id(request),
            arguments=arguments,
            as_task=as_task,
            base_url=base_url_from_request(request),
        )
        run = ConsoleRun(call=call, run_id=new_run_id())
        response = StreamingHttpResponse(run.stream(), content_type="text/event-stream")
        response["Cache-Control"] = "no-store"
        response["X-Accel-Buffering"] = "no"  # a proxy in front must not hold the events back
        return response

    def _console_answer(self, request: HttpRequest, tool: Tool) -> HttpResponse:
        data = _json_body(request, MAX_ANSWER_BYTES)
        request_id = data.get("requestId")
        if not isinstance(request_id, str) or not request_id:
            raise ConsoleRequestError("requestId is missing.")
        if isinstance(data.get("result"), dict):
            answer: dict[str, Any] = {"result": data["result"]}
        else:
            message = data.get("error")
            answer = {"error": {"code": -1, "message": message if isinstance(message, str) else "Declined"}}
        async_to_sync(console_answer)(
            tenant_id=tool.tenant_id,
            user_id=_user_id(request),
            run_id=_run_id(data),
            request_id=request_id,
            answer=answer,
        )
        return HttpResponse(status=204)

    def _console_cancel(self, request: HttpRequest, tool: Tool) -> HttpResponse:
        data = _json_body(request, MAX_ANSWER_BYTES)
        async_to_sync(console_cancel)(tenant_id=tool.tenant_id, user_id=_user_id(request), run_id=_run_id(data))
        return HttpResponse(status=204)


CONSOLE_PAGE = ObjectPage(
    label="Run in the console",
    url_name="tenants_tool_console",
    urls=lambda model_admin: ToolConsole(model_admin).get_urls(),
)
