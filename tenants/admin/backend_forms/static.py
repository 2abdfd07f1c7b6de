"""The static backend's section: a tool's stored result as text blocks and an "is an error" box; content of other
kinds (images, resources) and structured content stay in the Advanced (JSON) box."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tenants.admin.backend_forms.base import BackendSectionForm, JSONObject, section_marker
from tenants.admin.backend_forms.widgets import TextBlocksField
from tenants.models import Backend, Tool


def _texts(content: Any) -> list[str] | None:
    """The texts of ``content`` when it is only plain text blocks ({type: text, text}), else None."""
    if not isinstance(content, list):
        return None
    if not all(isinstance(b, dict) and set(b) == {"type", "text"} and b["type"] == "text" for b in content):
        return None
    texts = [b["text"] for b in content]
    return texts if all(isinstance(t, str) and t for t in texts) else None


def static_config_split(config: Any) -> tuple[JSONObject, Any]:
    """(the section's values, the rest) of a static tool's config; ``static_config_join`` makes it again."""
    if not isinstance(config, dict):
        return {"static_texts": [], "static_is_error": False}, config
    rest = dict(config)
    values: JSONObject = {"static_texts": [], "static_is_error": False}
    texts = _texts(rest.get("content"))
    if texts is not None:
        values["static_texts"] = texts
        rest.pop("content")
    if isinstance(rest.get("isError"), bool):
        values["static_is_error"] = rest.pop("isError")
    return values, rest or None


def static_config_join(values: dict[str, Any], rest: Any) -> Any:
    """The config of the text blocks, the error box and the Advanced (JSON) ``rest``."""
    if rest is not None and not isinstance(rest, dict):
        raise ValidationError({"config": ["Advanced (JSON) must be an object, or empty."]})
    config: JSONObject = dict(rest or {})
    texts = values.get("static_texts") or []
    if "content" in config and texts:
        raise ValidationError(
            {"static_texts": ['The content is given twice: as text blocks and as "content" in Advanced (JSON).']}
        )
    if "content" not in config:
        config["content"] = [{"type": "text", "text": text} for text in texts]
    if values.get("static_is_error"):
        if config.get("isError") is False:
            raise ValidationError({"static_is_error": ['Advanced (JSON) says "isError": false.']})
        config["isError"] = True
    return config


class StaticSectionForm(BackendSectionForm):
    backend = Backend.STATIC
    models = (Tool,)
    section_title = "Static result"
    section_fields = ("static_section", "static_texts", "static_is_error")

    static_section = section_marker()
    static_texts = TextBlocksField(
        required=False,
        label="Content",
        help_text="What every call returns, as text blocks. Images and resources: Advanced (JSON).",
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
