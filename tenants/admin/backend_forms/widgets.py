"""Rows of inputs that edit a list: a static result's content blocks, a prompt's messages and arguments. Each row's
inputs are named ``<field>_<row>_<part>``; the page offers a few empty rows to fill in, and a "Leave out" box per row.
``static/admin-backend-sections.js`` turns those into Add and Remove buttons, numbers rows again when one goes, and
shows only the parts of the kind a row's select chose. Without it every part shows and the kind picks which count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

JSONObject = dict[str, Any]
Row = dict[str, Any]
OMIT = "omit"


@dataclass(frozen=True)
class Part:
    """One input of a row. ``key`` is letters only (the script renumbers names and ids by the digits before it)."""

    key: str
    label: str
    control: str = "text"  # text, textarea, select, file, hidden
    choices: tuple[tuple[str, str], ...] = ()
    kinds: tuple[str, ...] = ()  # the row kinds that use it; empty: every row
    maxlength: int | None = None
    accept: str = ""
    help: str = ""


class DisplayRows(list[Row]):
    """Rows as the widget shows them (strings by part), as opposed to the field's value (the list it edits)."""


class RowsWidget(forms.Widget):
    """A fieldset per row, ``extra`` empty rows after them, and the Add button the script reveals."""

    parts: ClassVar[tuple[Part, ...]] = ()
    row_label: ClassVar[str] = "Row"
    add_label: ClassVar[str] = "Add a row"
    extra: ClassVar[int] = 1
    max_rows: ClassVar[int] = 50

    def value_from_datadict(self, data: Any, files: Any, name: str) -> DisplayRows:
        rows = DisplayRows()
        posted = [p for p in self.parts if p.control not in ("file",)]
        for index in range(self.max_rows + self.extra + 1):
            prefix = f"{name}_{index}_"
            if not any(prefix + part.key in data for part in posted):
                continue
            if data.get(prefix + OMIT):
                continue
            row: Row = {"number": index + 1}
            for part in self.parts:
                source = files if part.control == "file" else data
                row[part.key] = source.get(prefix + part.key) if source is not None else None
            rows.append(row)
        return rows

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return not any(key.startswith(f"{name}_") for key in data)

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        shown = [row for row in (value or []) if isinstance(row, dict)]
        while shown and self.row_blank(shown[-1]):  # the empty rows a page posted back: offered again below
            shown.pop()
        base = (attrs or {}).get("id") or f"id_{name}"
        rows = [*shown, *({} for _ in range(self.extra))]
        rendered = format_html_join("", "{}", ((self.render_row(name, base, i, row),) for i, row in enumerate(rows)))
        return format_html(
            '<div class="block-rows" id="{}" data-blocks>{}'
            '<button type="button" class="button block-add" data-block-add hidden>{}</button></div>',
            base,
            rendered,
            self.add_label,
        )

    def row_blank(self, row: Row) -> bool:
        """Whether nothing was filled in: no input holds a value, no select is off its first choice."""
        for part in self.parts:
            value = row.get(part.key)
            if part.control == "select":
                if part.choices and value not in (None, "", part.choices[0][0]):
                    return False
            elif value not in (None, ""):
                return False
        return True

    def render_row(self, name: str, base: str, index: int, row: Row) -> SafeString:
        number = index + 1
        parts = format_html_join("", "{}", ((self.render_part(name, base, index, part, row),) for part in self.parts))
        return format_html(
            '<fieldset class="block-row" data-block><legend>{label} {n}</legend>{parts}'
            '<span class="block-omit" data-block-omit><input type="checkbox" name="{name}_{i}_omit" '
            'id="{base}_{i}_omit"><label for="{base}_{i}_omit">Leave out {lower} {n}</label></span>'
            '<button type="button" class="button block-remove" data-block-remove hidden>Remove {lower} {n}</button>'
            "</fieldset>",
            label=self.row_label,
            lower=self.row_label.lower(),
            n=number,
            parts=parts,
            name=name,
            base=base,
            i=index,
        )

    def render_part(self, name: str, base: str, index: int, part: Part, row: Row) -> SafeString:
        field_name, field_id = f"{name}_{index}_{part.key}", f"{base}_{index}_{part.key}"
        value = row.get(part.key)
        value = "" if value is None or part.control == "file" else str(value)
        kinds = format_html(' data-kinds="{}"', " ".join(part.kinds)) if part.kinds else ""
        if part.control == "hidden":
            # Inside its kinds' wrapper, so that a row of another kind does not post it (the script disables it).
            return format_html(
                '<div class="block-part-hidden"{}><input type="hidden" name="{}" id="{}" value="{}"></div>',
                kinds,
                field_name,
                field_id,
                value,
            )
        length = format_html(' maxlength="{}"', part.maxlength) if part.maxlength else ""
        if part.control == "textarea":
            # The newline after the tag is the HTML parser's to drop: a text that starts with one keeps it.
            control = format_html(
                '<textarea name="{}" id="{}" rows="4" cols="60"{}>\n{}</textarea>', field_name, field_id, length, value
            )
        elif part.control == "select":
            options = format_html_join(
                "",
                '<option value="{}"{}>{}</option>',
                ((v, mark_safe(" selected") if v == value else "", label) for v, label in part.choices),
            )
            control = format_html('<select name="{}" id="{}">{}</select>', field_name, field_id, options)
        elif part.control == "file":
            control = format_html(
                '<input type="file" name="{}" id="{}" accept="{}">', field_name, field_id, part.accept
            )
        else:
            control = format_html(
                '<input type="text" name="{}" id="{}" value="{}" size="40"{}>', field_name, field_id, value, length
            )
        help_text = format_html('<span class="help">{}</span>', part.help) if part.help else ""
        return format_html(
            '<div class="block-part block-part-{}"{}><label for="{}">{}</label>{}{}{}</div>',
            part.key,
            kinds,
            field_id,
            part.label,
            control,
            help_text,
            self.render_extra(name, base, index, part, row),
        )

    def render_extra(self, name: str, base: str, index: int, part: Part, row: Row) -> SafeString:
        """What a part shows beside its input (a stored image's preview)."""
        return SafeString("")


class RowsField(forms.Field):
    """A list edited as rows. Subclasses say how a row becomes an item (``row_clean``: None for an empty row) and an
    item a row (``item_row``); errors name the row by its number on the page."""

    widget = RowsWidget
    item_name: ClassVar[str] = "row"
    max_items: ClassVar[int] = 50

    def row_clean(self, row: Row) -> Any:
        raise NotImplementedError

    def item_row(self, item: Any) -> Row:
        raise NotImplementedError

    def to_python(self, value: Any) -> list[Any]:
        if not value:
            return []
        rows = value if isinstance(value, DisplayRows) else self.prepare_value(value)
        items: list[Any] = []
        problems: list[str] = []
        for row in rows:
            try:
                item = self.row_clean(row)
            except ValidationError as exc:
                label = self.item_name.capitalize()
                problems.extend(f"{label} {row.get('number', '?')}: {message}" for message in exc.messages)
                continue
            if item is not None:
                items.append(item)
        if len(items) > self.max_items:
            problems.append(f"At most {self.max_items} {self.item_name}s.")
        if problems:
            raise ValidationError(problems)
        return items

    def prepare_value(self, value: Any) -> DisplayRows:
        if isinstance(value, DisplayRows):
            return value
        return DisplayRows(
            {"number": number, **self.item_row(item)} for number, item in enumerate(value or [], start=1)
        )

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(data) != list(initial or [])
        except ValidationError:
            return True


def text_typed(value: Any) -> str:
    """A textarea's text as typed: the CRLF a browser sends is the LF the person typed."""
    return str(value or "").replace("\r\n", "\n").replace("\r", "\n")


def line_typed(value: Any) -> str:
    """A one-line input's text without the spaces around it."""
    return str(value or "").strip()


def line_checked(row: Row, key: str, label: str, limit: int) -> str:
    """A row's one-line input ``key``, typed text without the spaces around it. Raises ValidationError naming it by
    ``label`` when it holds a line break or more than ``limit`` characters."""
    value = line_typed(row.get(key))
    if "\n" in value or "\r" in value:
        raise ValidationError(f"the {label} is one line.")
    if len(value) > limit:
        raise ValidationError(f"the {label} has at most {limit} characters.")
    return value


def line_fits(value: Any, limit: int) -> bool:
    """Whether a stored string comes back unchanged from a one-line input."""
    return (
        isinstance(value, str) and bool(value) and value == value.strip() and "\n" not in value and len(value) <= limit
    )


def text_fits(value: Any, limit: int) -> bool:
    """Whether a stored string comes back unchanged from a textarea (browsers send line breaks as CRLF)."""
    return isinstance(value, str) and "\r" not in value and len(value) <= limit
