"""The static backend's sections: a tool's stored result as content blocks (text, image, embedded resource, resource
link) and an "is an error" box; a resource template's text. Content the blocks cannot hold exactly, structured
content, and any other key stay in the Advanced (JSON) box."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tenants.admin.backend_forms.base import BackendSectionForm, JSONObject, section_marker
from tenants.admin.backend_forms.blocks import ContentBlocksField, content_fits, images_known
from tenants.admin.backend_forms.widgets import text_fits
from tenants.admin.fields import TypedTextField
from tenants.models import Backend, ResourceTemplate, Tool

MAX_TEMPLATE_TEXT = 1_000_000


def static_config_split(config: Any) -> tuple[JSONObject, Any]:
    """(the section's values, the rest) of a static tool's config; ``static_config_join`` makes it again."""
    values: JSONObject = {"static_blocks": [], "static_is_error": False}
    if not isinstance(config, dict):
        return values, config
    rest = dict(config)
    if content_fits(rest.get("content")):
        values["static_blocks"] = rest.pop("content")
    if isinstance(rest.get("isError"), bool):
        values["static_is_error"] = rest.pop("isError")
    return values, rest or None


def static_config_join(values: dict[str, Any], rest: Any) -> Any:
    """The config of the content blocks, the error box and the Advanced (JSON) ``rest``."""
    if rest is not None and not isinstance(rest, dict):
        raise ValidationError({"config": ["Advanced (JSON) must be an object, or empty."]})
    config: JSONObject = dict(rest or {})
    blocks = values.get("static_blocks") or []
    if "content" in config and blocks:
        raise ValidationError(
            {"static_blocks": ['The content is given twice: as blocks and as "content" in Advanced (JSON).']}
        )
    if "content" not in config:
        config["content"] = list(blocks)
    if values.get("static_is_error"):
        if config.get("isError") is False:
            raise ValidationError({"static_is_error": ['Advanced (JSON) says "isError": false.']})
        config["isError"] = True
    return config


class StaticSectionForm(BackendSectionForm):
    backend = Backend.STATIC
    models = (Tool,)
    section_title = "Static result"
    section_fields = ("static_section", "static_blocks", "static_is_error")

    static_section = section_marker()
    static_blocks = ContentBlocksField(
        required=False,
        label="Content",
        help_text="What every call returns, block by block: text, an image, an embedded resource or a link to one.",
    )
    static_is_error = forms.BooleanField(
        required=False, label="The result is an error", help_text="Clients see it as a failed call (isError)."
    )

    @classmethod
    def split(cls, config: Any) -> tuple[JSONObject, Any]:
        return static_config_split(config)

    @classmethod
    def join(cls, values: dict[str, Any], rest: Any) -> Any:
        return static_config_join(values, rest)

    @classmethod
    def offer(cls, form: forms.BaseForm, tenant_ids: Collection[int] | None) -> None:
        # The images the page may keep without sending them again: the stored tool's, and no other.
        field = form.fields.get("static_blocks")
        instance = getattr(form, "instance", None)
        if instance is None or instance.pk is None or instance.backend != Backend.STATIC:
            return
        if isinstance(field, ContentBlocksField) and isinstance(instance.config, dict):
            field.known_images = images_known(instance.config.get("content"))


def static_template_split(config: Any) -> tuple[JSONObject, Any]:
    """(the text field's value, the rest) of a static template's config."""
    if not isinstance(config, dict) or not text_fits(config.get("text"), MAX_TEMPLATE_TEXT):
        return {"static_template_text": ""}, config
    rest = dict(config)
    return {"static_template_text": rest.pop("text")}, rest or None


def static_template_join(values: dict[str, Any], rest: Any) -> Any:
    if rest is not None and not isinstance(rest, dict):
        raise ValidationError({"config": ["Advanced (JSON) must be an object, or empty."]})
    config: JSONObject = dict(rest or {})
    text = values.get("static_template_text") or ""
    if "text" in config and text:
        raise ValidationError(
            {"static_template_text": ['The text is given twice: here and as "text" in Advanced (JSON).']}
        )
    if "text" not in config:
        config["text"] = text
    return config


class StaticTemplateSectionForm(BackendSectionForm):
    backend = Backend.STATIC
    models = (ResourceTemplate,)
    section_title = "Static text"
    section_fields = ("static_template_section", "static_template_text")

    static_template_section = section_marker()
    static_template_text = TypedTextField(
        required=False,
        max_length=MAX_TEMPLATE_TEXT,
        label="Text",
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="What a read returns; each {variable} of the URI template is replaced by its value.",
    )

    @classmethod
    def split(cls, config: Any) -> tuple[JSONObject, Any]:
        return static_template_split(config)

    @classmethod
    def join(cls, values: dict[str, Any], rest: Any) -> Any:
        return static_template_join(values, rest)
