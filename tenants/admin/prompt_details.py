"""A prompt's arguments and messages as rows: arguments as name, description and required; a static prompt's
messages as role and text. Lists the rows cannot hold exactly stay whole in the JSON boxes under them ("Arguments
(JSON)", "Messages (JSON)"); a post without the rows' marker reads the JSON boxes alone."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from mcp_core.content import ROLES
from tenants.admin.backend_forms.widgets import (
    Part,
    Row,
    RowsField,
    RowsWidget,
    line_checked,
    line_fits,
    text_fits,
    text_typed,
)

JSONObject = dict[str, Any]
MAX_NAME, MAX_DESCRIPTION, MAX_MESSAGE = 128, 2000, 100_000
REQUIRED_CHOICES = (("", "Not said"), ("yes", "Yes"), ("no", "No"))
ROLE_CHOICES = tuple((role, role.capitalize()) for role in ROLES)


def argument_clean(row: Row) -> JSONObject | None:
    name = line_checked(row, "name", "name", MAX_NAME)
    description = line_checked(row, "description", "description", MAX_DESCRIPTION)
    required = row.get("required") or ""
    if required not in ("", "yes", "no"):
        raise ValidationError("required is yes, no or not said.")
    if not name:
        if description or required:
            raise ValidationError("an argument needs a name.")
        return None
    argument: JSONObject = {"name": name}
    if description:
        argument["description"] = description
    if required:
        argument["required"] = required == "yes"
    return argument


def argument_row(argument: JSONObject) -> Row:
    required = argument.get("required")
    return {
        "name": argument.get("name", ""),
        "description": argument.get("description", ""),
        "required": "" if required is None else ("yes" if required else "no"),
    }


def _argument_fits(argument: Any) -> bool:
    if not isinstance(argument, dict) or not set(argument) <= {"name", "description", "required"}:
        return False
    if not line_fits(argument.get("name"), MAX_NAME):
        return False
    if "description" in argument and not line_fits(argument["description"], MAX_DESCRIPTION):
        return False
    return "required" not in argument or isinstance(argument["required"], bool)


def message_clean(row: Row) -> JSONObject | None:
    role = row.get("role") or ROLES[0]
    if role not in ROLES:
        raise ValidationError(f"the role is {' or '.join(ROLES)}.")
    text = text_typed(row.get("text"))
    if not text:
        return None
    if len(text) > MAX_MESSAGE:
        raise ValidationError(f"a message has at most {MAX_MESSAGE} characters.")
    return {"role": role, "content": {"type": "text", "text": text}}


def message_row(message: JSONObject) -> Row:
    return {"role": message.get("role", ""), "text": (message.get("content") or {}).get("text", "")}


def _message_fits(message: Any) -> bool:
    if not isinstance(message, dict) or set(message) != {"role", "content"} or message["role"] not in ROLES:
        return False
    content = message["content"]
    if not isinstance(content, dict) or set(content) != {"type", "text"} or content["type"] != "text":
        return False
    return bool(content["text"]) and text_fits(content["text"], MAX_MESSAGE)


def rows_split(items: Any, fits: Any) -> tuple[list[JSONObject], Any]:
    """(rows, the rest for the JSON box) of a stored list: rows when every item fits them, else all in the box."""
    if isinstance(items, list) and all(fits(item) for item in items):
        return list(items), None
    return [], items


def rows_join(rows: list[JSONObject], rest: Any, *, field: str, box: str) -> Any:
    if rows and rest not in (None, []):
        raise ValidationError({field: [f"These are given twice: here and in {box}."]})
    return rows or (rest if rest is not None else [])


class ArgumentRowsWidget(RowsWidget):
    parts = (
        Part("name", "Name", maxlength=MAX_NAME),
        Part("description", "Description (optional)", maxlength=MAX_DESCRIPTION),
        Part("required", "Required", control="select", choices=REQUIRED_CHOICES),
    )
    row_label = "Argument"
    add_label = "Add an argument"
    extra = 2
    max_rows = 50


class ArgumentRowsField(RowsField):
    widget = ArgumentRowsWidget
    item_name = "argument"

    def row_clean(self, row: Row) -> JSONObject | None:
        return argument_clean(row)

    def item_row(self, item: Any) -> Row:
        return argument_row(item) if isinstance(item, dict) else {}


class MessageRowsWidget(RowsWidget):
    parts = (
        Part("role", "Role", control="select", choices=ROLE_CHOICES),
        Part("text", "Text", control="textarea", maxlength=MAX_MESSAGE),
    )
    row_label = "Message"
    add_label = "Add a message"
    extra = 1
    max_rows = 50


class MessageRowsField(RowsField):
    widget = MessageRowsWidget
    item_name = "message"

    def row_clean(self, row: Row) -> JSONObject | None:
        return message_clean(row)

    def item_row(self, item: Any) -> Row:
        return message_row(item) if isinstance(item, dict) else {}


# The model field each rows field edits, the JSON box's label, and whether a stored item fits a row.
ROWS = {
    "argument_rows": ("arguments", "Arguments (JSON)", _argument_fits),
    "message_rows": ("messages", "Messages (JSON)", _message_fits),
}


class PromptDetailsForm(forms.ModelForm):
    """Mixed into the prompt form: arguments and messages as rows, joined into the lists the services store."""

    details_fields = ("prompt_rows_section", "argument_rows")
    message_fields = ("message_rows",)
    prompt_rows_section = forms.CharField(required=False, initial="1", widget=forms.HiddenInput)
    argument_rows = ArgumentRowsField(
        required=False,
        label="Arguments",
        help_text="What a client fills in; a message uses an argument as {{name}}.",
    )
    message_rows = MessageRowsField(
        required=False,
        label="Messages",
        help_text="What the prompt gives the model, in order. Images and resources: Messages (JSON).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored_lists = {model: getattr(self.instance, model) for model, _, _ in ROWS.values()}
        for field, (model, box, fits) in ROWS.items():
            rows, rest = rows_split(getattr(self.instance, model), fits)
            self.initial[field] = rows
            self.initial[model] = rest
            if model in self.fields:
                self.fields[model].label = box
                self.fields[model].help_text = "Only what the rows above cannot hold."

    def _rows_used(self) -> bool:
        return bool(self.data.get(self.add_prefix("prompt_rows_section")))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self._rows_used():
            return cleaned
        for field, (model, box, _) in ROWS.items():
            if model not in self.fields or model in self.errors or field in self.errors:
                continue
            try:
                cleaned[model] = rows_join(cleaned.get(field) or [], cleaned.get(model), field=field, box=box)
            except ValidationError as exc:
                for name, messages in exc.message_dict.items():
                    self.add_error(name, messages)
        return cleaned

    def validation_error_field(self, field: str) -> str:
        """Where the service's error about ``field`` shows: on the rows when they hold the list."""
        if not self._rows_used():
            return field
        for rows, (model, _, _) in ROWS.items():
            box_empty = self.data.get(self.add_prefix(model)) in (None, "")
            if field == model and rows in self.fields and (getattr(self, "cleaned_data", {}).get(rows) or box_empty):
                return rows
        return field

    @property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        changed = list(super().changed_data)
        cleaned = getattr(self, "cleaned_data", {})
        if self.instance.pk is not None:
            for model, before in self._stored_lists.items():
                if model in cleaned and model not in changed and cleaned[model] != before:
                    changed.append(model)
        return changed
