"""Admin for Python functions: the per-tenant grants (superusers only; several functions in one form, only those the
tenant may be granted offered) and the select of granted functions that tool, template and prompt forms offer
instead of a typed name."""

from __future__ import annotations

import inspect
import json
from collections.abc import Collection
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from tenants.admin.backend_forms.base import BackendSectionForm, JSONObject, section_marker
from tenants.admin.scoping import NOBODY, TenantScopedAdmin
from tenants.backends.python_grants import (
    function_help,
    grant_problem,
    grantable_functions,
    python_function_revoke,
    python_functions_grant,
    python_functions_granted,
)
from tenants.backends.python_schema import EMPTY_SCHEMA, function_signature_text, signature_schema
from tenants.backends.registry import default_registry
from tenants.models import Backend, Prompt, PythonFunctionGrant, ResourceTemplate, Tenant, Tool

FunctionChoices = list[tuple[str, Any]]


def _registered(model: type[Any]) -> set[str]:
    if model is Tool:
        return set(default_registry.tool_names())
    if model is ResourceTemplate:
        return set(default_registry.resource_template_names())
    if model is Prompt:
        return set(default_registry.prompt_names())
    return set(default_registry.names())


def _details(name: str, *, with_schema: bool) -> tuple[str, str, str, str]:
    """(name, the input schema made from its signature as JSON or "" where not asked for, signature, docstring)."""
    function = default_registry.function(name)
    if function is None:
        return name, "", name, ""
    schema = json.dumps(signature_schema(function)) if with_schema else ""
    return name, schema, function_signature_text(name, function), inspect.getdoc(function) or "(no docstring)"


def _help(names: list[str], *, with_schema: bool) -> str:
    if not names:
        return "No function of this kind is granted to this tenant: platform staff grant them (Python function grants)."
    # Every granted function with its signature and docstring (and for a tool, the schema made from the signature);
    # the section's script shows only the chosen one and puts its schema in a schema box still at its default.
    items = format_html_join(
        "",
        '<div class="python-function-details" data-python-function="{}" data-input-schema="{}"><code>{}</code>'
        "<pre>{}</pre></div>",
        (_details(name, with_schema=with_schema) for name in names),
    )
    return format_html(
        "Functions platform staff granted to the tenant. A tool left with the input schema "
        '<code>{{"type": "object"}}</code>, or with the one made from its previous function, gets one made from the '
        "function's signature.{}",
        items,
    )


class PythonFunctionForm(BackendSectionForm):
    """Adds ``python_function``: a select of the functions granted to the entry's tenant (all tenants' grants,
    grouped by tenant, while adding). Choosing one sets ``config`` to ``{"function": name}``; a tool whose input
    schema was left at ``{"type": "object"}`` gets the schema of the function's signature."""

    backend = Backend.PYTHON
    models = (Tool, ResourceTemplate, Prompt)
    section_title = "Python function"
    section_fields = ("python_section", "python_function")
    chosen_first = True

    python_section = section_marker()
    python_function = forms.ChoiceField(
        required=False, label="Python function", help_text="For the Python backend: sets the config."
    )

    @classmethod
    def split(cls, config: Any) -> tuple[JSONObject, Any]:
        if isinstance(config, dict) and set(config) == {"function"} and isinstance(config["function"], str):
            return {"python_function": config["function"]}, None
        return {}, config

    @classmethod
    def join(cls, values: dict[str, Any], rest: Any) -> Any:
        function = values.get("python_function")
        if function and rest:
            raise ValidationError({"python_function": ["The function is given twice: here and in Advanced (JSON)."]})
        return {"function": function} if function else rest

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._offer(None)
        instance = self.instance
        if instance.backend == Backend.PYTHON and isinstance(instance.config, dict):
            self.fields["python_function"].initial = instance.config.get("function")

    def limit_to_tenants(self, tenant_ids: Collection[int]) -> None:
        """Called by the admin's scoping: offer only the grants of the tenants the person administers."""
        self._offer(tenant_ids)

    def _offer(self, tenant_ids: Collection[int] | None) -> None:
        grants = PythonFunctionGrant.objects.select_related("tenant").filter(function__in=_registered(self._meta.model))
        if tenant_ids is not None:
            grants = grants.filter(tenant_id__in=tenant_ids)
        instance = self.instance
        field = self.fields["python_function"]
        assert isinstance(field, forms.ChoiceField)
        if instance.pk is not None:
            names = sorted(g.function for g in grants.filter(tenant_id=instance.tenant_id))
            choices: FunctionChoices = [("", "---------"), *((name, name) for name in names)]
        else:
            by_tenant: dict[str, list[str]] = {}
            for grant in grants:
                by_tenant.setdefault(grant.tenant.slug, []).append(grant.function)
            names = sorted({name for group in by_tenant.values() for name in group})
            choices = [("", "---------")]
            choices += [(slug, [(n, n) for n in sorted(group)]) for slug, group in sorted(by_tenant.items())]
        field.choices = choices
        field.help_text = _help(names, with_schema=self._meta.model is Tool)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        function = cleaned.get("python_function")
        if cleaned.get("backend") == Backend.PYTHON and function:
            cleaned["config"] = {"function": function}
            tool_function = default_registry.function(function) if self._meta.model is Tool else None
            if tool_function is not None and self._schema_is_generated(cleaned.get("input_schema")):
                cleaned["input_schema"] = signature_schema(tool_function)
        return cleaned

    def _schema_is_generated(self, schema: Any) -> bool:
        """Whether ``schema`` is one nobody wrote: ``{"type": "object"}``, or the one made from the function the
        tool had (so a new choice brings its own, as the section's script does on the page)."""
        if schema == EMPTY_SCHEMA:
            return True
        instance = self.instance
        stored = instance.config if instance.pk is not None and instance.backend == Backend.PYTHON else None
        name = stored.get("function") if isinstance(stored, dict) else None
        previous = default_registry.function(name) if isinstance(name, str) else None
        return previous is not None and schema == signature_schema(previous)

    @property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        # A new choice is a change of config, which is what the services store; a generated schema is a change too.
        changed = list(super().changed_data)
        if "python_function" in changed and "config" not in changed:
            changed.append("config")
        cleaned = getattr(self, "cleaned_data", {})
        generated = "input_schema" in cleaned and cleaned["input_schema"] != self.initial.get("input_schema")
        if generated and "input_schema" not in changed:
            changed.append("input_schema")
        return changed


class GrantForm(forms.ModelForm):
    """One tenant and any number of functions at once; only functions the tenant may be granted are offered (those
    reserved for another built-in tenant never are), and those it holds already are listed, not offered."""

    functions = forms.MultipleChoiceField(
        label="Python functions", widget=forms.CheckboxSelectMultiple, error_messages={"required": "Tick at least one."}
    )

    class Meta:
        model = PythonFunctionGrant
        fields = ("tenant", "functions")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenant = self._chosen_tenant()
        held = set(python_functions_granted(tenant_id=tenant.pk)) if tenant is not None else set()
        names = [name for name in grantable_functions(tenant) if name not in held]
        field = self.fields["functions"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(name, function_help(name)) for name in names]
        notes = ["Registered functions this tenant may be granted."]
        if held:
            notes.append(format_html("Already granted: {}.", ", ".join(sorted(held))))
        if tenant is None:
            notes.append(
                "Packages reserved for a built-in tenant (conformance.*, bench.*) are offered for that tenant only."
            )
        field.help_text = format_html_join(" ", "{}", ((note,) for note in notes))

    def _chosen_tenant(self) -> Tenant | None:
        raw = self.data.get("tenant") if self.is_bound else self.initial.get("tenant")
        if isinstance(raw, Tenant):
            return raw
        try:
            return Tenant.objects.filter(pk=int(raw)).first() if raw not in (None, "") else None
        except (TypeError, ValueError):
            return None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        tenant = cleaned.get("tenant")
        for function in cleaned.get("functions") or ():
            problem = grant_problem(tenant, function) if tenant is not None else None
            if problem is not None:
                self.add_error("functions", problem)
        return cleaned


@admin.register(PythonFunctionGrant)
class PythonFunctionGrantAdmin(TenantScopedAdmin):
    """Only superusers see or change grants: a grant lets a tenant run platform code."""

    tenant_path = "tenant"
    view_roles = add_roles = change_roles = delete_roles = NOBODY

    form = GrantForm
    list_display = ("function", "tenant", "granted_at")
    list_filter = ("tenant",)
    search_fields = ("function", "tenant__slug")
    list_select_related = ("tenant",)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a grant is added or withdrawn, never edited into another

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("tenant", "functions") if obj is None else ("tenant", "function", "granted_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return () if obj is None else ("tenant", "function", "granted_at")

    def save_model(self, request: HttpRequest, obj: PythonFunctionGrant, form: forms.ModelForm, change: bool) -> None:
        functions = sorted(form.cleaned_data["functions"])
        python_functions_grant(tenant=obj.tenant, functions=functions)
        stored = PythonFunctionGrant.objects.get(tenant=obj.tenant, function=functions[0])
        obj.__dict__.update(stored.__dict__)
        obj.granted_now = functions  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: PythonFunctionGrant, post_url_continue: str | None = None) -> Any:
        functions = getattr(obj, "granted_now", [obj.function])
        self.message_user(
            request,
            f"Granted {len(functions)} function{'s' if len(functions) != 1 else ''} to {obj.tenant.slug}: "
            f"{', '.join(functions)}.",
            messages.SUCCESS,
        )
        changelist = reverse("admin:tenants_pythonfunctiongrant_changelist")
        return HttpResponseRedirect(f"{changelist}?tenant__id__exact={obj.tenant_id}")

    def _revoke(self, request: HttpRequest, grant: PythonFunctionGrant) -> None:
        try:
            python_function_revoke(tenant=grant.tenant, function=grant.function)
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), level=messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: PythonFunctionGrant) -> None:
        self._revoke(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[PythonFunctionGrant]) -> None:
        for grant in queryset.select_related("tenant"):
            self._revoke(request, grant)
