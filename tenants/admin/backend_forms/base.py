"""What the backend sections of the catalog forms share. A section (``BackendSectionForm``) declares the fields that
edit one backend's ``config`` and says how a config splits into them and joins back; ``SectionedConfigForm`` (the
base of the catalog forms) runs the section of the backend chosen. The ``config`` box stays as "Advanced (JSON)":
it holds only what the section's fields cannot express, and joining puts the two together.

A post without the section's marker field (an older page, a script) is read as before: ``config`` is the whole
configuration.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from tenants.admin.secret_picker import secrets_refuse_missing
from tenants.backends.plugs import backends_chosen_by_hand
from tenants.models import Backend, ResourceTemplate, Tool
from tenants.secret_references import secret_names_in

JSONObject = dict[str, Any]


class BackendSectionForm(forms.ModelForm):
    """The fields of one backend's section, mixed into the catalog forms.

    Subclasses set ``backend`` (a ``Backend`` choice), ``models`` (the entries it serves), ``section_title`` and
    ``section_fields`` (the marker field first), and implement ``split`` and ``join`` as class methods: a form holds
    every section, so nothing here may depend on which class ``self`` resolves an attribute to.
    """

    backend: ClassVar[str]
    models: ClassVar[tuple[type, ...]] = ()
    section_title: ClassVar[str]
    section_fields: ClassVar[tuple[str, ...]] = ()
    # The field that picks the secret the config names, where the section has one (its errors go there).
    secret_field: ClassVar[str | None] = None

    @classmethod
    def marker(cls) -> str:
        return cls.section_fields[0]

    @classmethod
    def split(cls, config: Any) -> tuple[JSONObject, Any]:
        """(initial values of the section's fields, what is left for the Advanced (JSON) box) of a stored config.
        The join of the two is ``config`` again."""
        raise NotImplementedError

    @classmethod
    def join(cls, values: dict[str, Any], rest: Any) -> Any:
        """The config of the section's cleaned ``values`` and the Advanced (JSON) box's ``rest``. Raises
        ``ValidationError`` (a dict by field) for what cannot be joined."""
        raise NotImplementedError

    @classmethod
    def offer(cls, form: forms.BaseForm, tenant_ids: Collection[int] | None) -> None:
        """Narrow choices that depend on the tenants (None: every tenant's), e.g. a secret picker."""

    @classmethod
    def secret_field_for(cls, config: Any, name: str) -> str | None:
        """The field that picked the secret ``name`` of ``config`` (its errors go there); ``secret_field`` unless
        the section has several pickers."""
        return cls.secret_field


def section_marker() -> forms.CharField:
    """The hidden field that says a section was on the page."""
    return forms.CharField(required=False, initial="1", widget=forms.HiddenInput)


class SectionedConfigForm(forms.ModelForm):
    """A catalog form whose ``config`` is edited through the section of the chosen backend."""

    sections: ClassVar[tuple[type[BackendSectionForm], ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model = self._meta.model
        self._sections = {s.backend: s for s in type(self).sections if model in s.models}
        for section in type(self).sections:
            if model not in section.models:
                for name in section.section_fields:
                    self.fields.pop(name, None)
        self._stored_config = self.instance.config if self.instance.pk is not None else None
        # Every backend a person picks for a tool or a template has a section; a prompt's static config is empty (its
        # messages are the prompt), so its box stays the config itself.
        if "config" in self.fields and model in (Tool, ResourceTemplate):
            config = self.fields["config"]
            config.label = "Advanced (JSON)"
            config.help_text = "Only what the fields of the backend's section cannot express; saved together with them."
        by_hand = backends_chosen_by_hand()
        if "backend" in self.fields and self.instance.backend in by_hand:
            # Items of a backend nobody picks (mirrored ones, made by the federation) keep theirs; others choose
            # among the rest.
            backend = self.fields["backend"]
            assert isinstance(backend, forms.ChoiceField)
            backend.choices = [(v, label) for v, label in Backend.choices if v in by_hand]
        stored = self._sections.get(self.instance.backend)
        if stored is not None and "config" in self.fields:
            values, rest = stored.split(self.instance.config)
            self.initial.update(values)
            self.initial["config"] = rest
        self.offer_sections(None)

    def offer_sections(self, tenant_ids: Collection[int] | None) -> None:
        for section in self._sections.values():
            section.offer(self, tenant_ids)

    def limit_to_tenants(self, tenant_ids: Collection[int]) -> None:
        """Called by the admin's scoping: sections offer only what the person's tenants hold."""
        self.offer_sections(tenant_ids)
        parent = getattr(super(), "limit_to_tenants", None)
        if callable(parent):
            parent(tenant_ids)

    def active_section(self, backend: Any) -> type[BackendSectionForm] | None:
        section = self._sections.get(backend)
        if section is None or not self.data.get(self.add_prefix(section.marker())):
            return None
        return section

    def clean(self) -> dict[str, Any]:
        rest = self.cleaned_data.get("config")  # as typed in the box, before any section's own clean
        cleaned = super().clean() or {}
        section = self.active_section(cleaned.get("backend"))
        if section is None or "config" not in self.fields or "config" in self.errors:
            return cleaned
        values = {name: cleaned.get(name) for name in section.section_fields}
        try:
            cleaned["config"] = section.join(values, rest)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else "config", messages)
        return cleaned

    def check_references(self) -> None:
        """Every secret the config names must be one of the tenant's: an error at save, not a failed call later.
        (The Python function a config names is checked by the validation: registered and granted.)"""
        cleaned = getattr(self, "cleaned_data", {})
        if "config" not in cleaned or "config" in self.errors:
            return
        tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
        backend = cleaned.get("backend", self.instance.backend)
        if tenant is None:
            return
        section = self._sections.get(backend)
        active = section is not None and self.active_section(backend)
        for name in dict.fromkeys(secret_names_in(backend, cleaned["config"])):
            field = section.secret_field_for(cleaned["config"], name) if section is not None and active else None
            secrets_refuse_missing(self, field if field in self.fields else "config", tenant=tenant, names=[name])

    @property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        changed = list(super().changed_data)
        config = getattr(self, "cleaned_data", {}).get("config")
        if "config" not in changed and self.instance.pk is not None and config != self._stored_config:
            changed.append("config")
        return changed
