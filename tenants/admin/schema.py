"""The admin's JSON Schema editor: the widget of every JSON Schema field (a plain textarea that the editor script
enhances) and the admin endpoint that checks a draft schema with the very rules saving applies."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponseNotAllowed, JsonResponse
from django.urls import path, reverse_lazy

from tenants import validation
from tenants.admin.fields import OptionalJSONField, json_nesting_problem
from tenants.models import Tool

# A draft is checked on every pause in typing; a schema this large is no tool's (the request body is capped too).
MAX_DRAFT_BYTES = 256 * 1024
CHECK_URL_NAME = "tenants_tool_schema_check"


class JsonSchemaWidget(forms.Textarea):
    """A textarea of JSON that ``static/admin-schema-editor.js`` turns into an editor with highlighting, live
    checks and (``preview``) the form a client renders for the schema. Without script it is the textarea."""

    def __init__(self, *, field: str, preview: bool) -> None:
        super().__init__(
            attrs={
                "rows": 14,
                "cols": 100,
                "class": "schema-editor-source",
                "spellcheck": "false",
                "data-schema-editor": field,
                "data-schema-check-url": reverse_lazy(f"admin:{CHECK_URL_NAME}"),
                "data-schema-preview": "1" if preview else "",
            }
        )

    def format_value(self, value: Any) -> str | None:
        # Shown indented, one key a line, so that errors have a line to point at; the value is the same JSON.
        text = super().format_value(value)
        if not text or json_nesting_problem(text):
            return text  # nested too deeply to parse: shown as typed with its error
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text  # what was typed, not JSON: shown as typed with its error

    class Media:
        css = {"all": ("vendor/codemirror/lib/codemirror.css",)}
        js = (
            "vendor/codemirror/lib/codemirror.js",
            "vendor/codemirror/mode/javascript/javascript.js",
            "vendor/codemirror/addon/edit/matchbrackets.js",
            "vendor/codemirror/addon/edit/closebrackets.js",
            "admin-schema-form.js",
            "admin-schema-editor.js",
        )


def draft_schema_problems(*, field: str, text: str) -> list[str]:
    """What saving the tool with ``text`` in ``field`` would say about that field: the form field's JSON parsing,
    then ``validation.tool_schema_errors``. Raises ``KeyError`` for a field that is not a tool schema."""
    what = validation.TOOL_SCHEMA_FIELDS[field]
    model_field = Tool._meta.get_field(field)
    assert isinstance(model_field, models.JSONField)
    form_field = model_field.formfield(form_class=OptionalJSONField)
    assert form_field is not None
    try:
        schema = form_field.clean(text)
    except ValidationError as exc:
        return [f"{what}: {message}" for message in exc.messages]
    return validation.tool_schema_errors(field=field, schema=schema)


class SchemaEditorAdmin:
    """Mixed into the tool admin: its schema fields get the editor, and it serves the draft check."""

    admin_site: Any

    def schema_widgets(self) -> dict[str, JsonSchemaWidget]:
        # The input schema is what clients render as a form; an output schema describes results, not a form.
        return {
            name: JsonSchemaWidget(field=name, preview=name == "input_schema") for name in validation.TOOL_SCHEMA_FIELDS
        }

    def schema_check_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.schema_check_view)
        return [path("schema-check/", view, name=CHECK_URL_NAME)]

    def schema_check_view(self, request: HttpRequest) -> JsonResponse | HttpResponseNotAllowed:
        """POST ``{"field": "input_schema" | "output_schema", "text": "<draft>"}`` -> ``{"errors": [...]}``.

        For whoever may add or change a tool in some tenant; a schema's validity does not depend on the tenant, so
        nothing of any tenant is read. 400 for a malformed request (nested deeper than the JSON boxes accept included),
        413 beyond ``MAX_DRAFT_BYTES``.
        """
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        model_admin: Any = self
        if not (model_admin.has_add_permission(request) or model_admin.has_change_permission(request)):
            raise PermissionDenied
        declared = request.headers.get("Content-Length", "")
        if (declared.isdigit() and int(declared) > MAX_DRAFT_BYTES) or len(request.body) > MAX_DRAFT_BYTES:
            return JsonResponse({"errors": ["The schema is too large to check."]}, status=413)
        nested_too_deeply = json_nesting_problem(request.body)
        if nested_too_deeply:
            return JsonResponse({"errors": [nested_too_deeply]}, status=400)
        try:
            payload = json.loads(request.body)
            field, text = payload["field"], payload["text"]
            if field not in validation.TOOL_SCHEMA_FIELDS or not isinstance(text, str):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return JsonResponse({"errors": ["Send {field, text}."]}, status=400)
        return JsonResponse({"errors": draft_schema_problems(field=field, text=text)})
