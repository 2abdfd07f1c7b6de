"""The console's pages on the tool admin: the page with the tool's form, the run (an event stream answering a POST),
and the page's answers and cancel button. Another tenant's tool is a 404 on each, as on the tool's own page.

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
            },
            "task_optional": tool.task_support == TaskSupport.OPTIONAL,
            "task_required": tool.task_support == TaskSupport.REQUIRED,
        }
        return TemplateResponse(request, "admin/tenants/tool/console.html", context)

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
            tenant=tool.tenant, user_id=_user_id(request), tool=tool.name, arguments=arguments, as_task=as_task
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
