"""Form fields of the catalog admin that keep what people type: optional JSON shown empty rather than ``null``,
text stored with the newlines typed (browsers send CRLF), help texts shown as written (``/t/<slug>/mcp``), tags
typed as a list of words; and JSON boxes that refuse nesting no definition needs before it reaches a recursive
parser or schema check."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import models
from django.utils.html import escape
from django.utils.safestring import SafeString

# No tool schema, config or annotation needs more; Python's json module and the JSON Schema checks recurse once
# or more per level and would fail (RecursionError) somewhere past a few hundred.
MAX_JSON_DEPTH = 64


def json_nesting_problem(text: str | bytes, *, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why JSON ``text`` is nested too deeply to parse, or None; one pass over the text, brackets inside strings
    ignored. Malformed JSON is left for the parser to report."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return f"The JSON is nested deeper than {limit} levels."
        elif char in "]}":
            depth -= 1
    return None


class BoundedJSONField(forms.JSONField):
    """Django's JSON box, refusing JSON nested deeper than ``MAX_JSON_DEPTH`` with a form error."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str | bytes) and not self.disabled:
            problem = json_nesting_problem(value)
            if problem:
                raise forms.ValidationError(problem, code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Shown again as typed: Django would parse it to decide, and meet the same recursion.
        if isinstance(data, str | bytes) and json_nesting_problem(data):
            return forms.fields.InvalidJSONInput(data)
        return super().bound_data(data, initial)


class OptionalJSONField(BoundedJSONField):
    """A JSON box whose empty value (None) shows as an empty box, not the literal ``null``."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


class TypedTextField(forms.CharField):
    """Text as typed: the CRLF line breaks a browser submits become the LF the person typed, and nothing is
    stripped (a resource's final newline is part of it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("strip", False)
        super().__init__(*args, **kwargs)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        return text.replace("\r\n", "\n").replace("\r", "\n") if isinstance(text, str) else text


class DefaultedIntegerField(forms.IntegerField):
    """A number that, left out or empty, is the model field's default: forms posted before the field existed (and
    scripts that post them) keep working."""

    def __init__(self, *args: Any, default: int, **kwargs: Any) -> None:
        kwargs["required"] = False
        super().__init__(*args, **kwargs)
        self.default = default

    def clean(self, value: Any) -> Any:
        cleaned = super().clean(value)
        return self.default if cleaned is None else cleaned


class TagsField(forms.Field):
    """A catalog item's tags (a JSON list) typed as words separated by commas or spaces: "read-only, billing". Each
    tag once, in the order typed; whether each is a tag is the services' rule (``tenants.selection.tag_errors``)."""

    widget = forms.TextInput(attrs={"size": 60, "placeholder": "e.g. read-only, billing"})

    def __init__(self, *args: Any, encoder: Any = None, decoder: Any = None, **kwargs: Any) -> None:
        # A JSON model field offers its encoder and decoder: words need neither.
        super().__init__(*args, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return ", ".join(str(tag) for tag in value)
        return "" if value is None else value

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return [str(tag) for tag in value]
        words = str(value or "").replace(",", " ").split()
        return list(dict.fromkeys(words))

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial) != self.to_python(data)


def as_typed(db_field: models.Field[Any, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``formfield`` arguments for ``db_field`` with the fields above, and its help text escaped (the admin
    renders help texts as HTML, where ``<slug>`` would vanish as an unknown tag)."""
    if isinstance(db_field, models.JSONField) and db_field.name == "tags":
        kwargs.setdefault("form_class", TagsField)
        kwargs.setdefault("required", False)
    elif isinstance(db_field, models.JSONField):
        kwargs.setdefault("form_class", OptionalJSONField)
    elif isinstance(db_field, models.TextField):
        kwargs.setdefault("form_class", TypedTextField)
    elif isinstance(db_field, models.IntegerField) and not db_field.null and isinstance(db_field.default, int):
        kwargs.setdefault("form_class", DefaultedIntegerField)
        kwargs.setdefault("default", db_field.default)
    if db_field.help_text and not isinstance(db_field.help_text, SafeString):
        kwargs.setdefault("help_text", escape(db_field.help_text))
    return kwargs
