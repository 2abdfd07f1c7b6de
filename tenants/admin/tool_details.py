"""A tool's annotations and icons as plain fields: the four hints as yes / no / not said, the title, and icons as
rows of source, MIME type, sizes and theme. What the fields cannot hold as written stays in the JSON boxes below
them ("Other annotations (JSON)", "Icons (JSON)"). A post without the fields' markers reads the JSON boxes alone."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

JSONObject = dict[str, Any]
HINT_FIELDS = {
    "readOnlyHint": ("annotation_read_only", "Read-only", "It does not change anything."),
    "destructiveHint": ("annotation_destructive", "Destructive", "It may delete or overwrite (when not read-only)."),
    "idempotentHint": (
        "annotation_idempotent",
        "Idempotent",
        "Calling it again with the same arguments changes nothing more.",
    ),
    "openWorldHint": ("annotation_open_world", "Open world", "It reaches outside systems (the web, other services)."),
}
ICON_KEYS = frozenset({"src", "mimeType", "sizes", "theme"})
MAX_ICONS = 20
THEMES = (("", "Any"), ("light", "Light"), ("dark", "Dark"))


def annotations_split(annotations: Any) -> tuple[JSONObject, Any]:
    """(the annotation fields' values, the rest) of a tool's annotations."""
    if not isinstance(annotations, dict):
        return {}, annotations
    rest = dict(annotations)
    values: JSONObject = {}
    for hint, (field, _, _) in HINT_FIELDS.items():
        if isinstance(rest.get(hint), bool):
            values[field] = rest.pop(hint)
    if isinstance(rest.get("title"), str) and "\n" not in rest["title"]:
        values["annotation_title"] = rest.pop("title")
    return values, rest or None


def annotations_join(values: dict[str, Any], rest: Any) -> Any:
    """The annotations of the fields' ``values`` and the JSON box's ``rest`` (None when there are none)."""
    if rest is not None and not isinstance(rest, dict):
        return rest  # the validation says what is wrong with it
    annotations: JSONObject = dict(rest or {})
    errors: dict[str, list[str]] = {}
    pairs = [(hint, field) for hint, (field, _, _) in HINT_FIELDS.items()] + [("title", "annotation_title")]
    for key, field in pairs:
        value = values.get(field)
        if value is None or value == "":
            continue
        if key in annotations:
            errors[field] = [f'This is given twice: here and as "{key}" in Other annotations (JSON).']
        annotations[key] = value
    if errors:
        raise ValidationError(errors)
    return annotations or None


def _icon_row(icon: Any) -> JSONObject | None:
    if not isinstance(icon, dict) or not set(icon) <= ICON_KEYS or not isinstance(icon.get("src"), str):
        return None
    src, mime, sizes, theme = icon["src"], icon.get("mimeType", ""), icon.get("sizes", []), icon.get("theme", "")
    if not src or src != src.strip() or not isinstance(mime, str) or mime != mime.strip():
        return None
    if "mimeType" in icon and not mime:
        return None
    if not isinstance(sizes, list) or not all(isinstance(s, str) and s and s.split() == [s] for s in sizes):
        return None
    if "sizes" in icon and not sizes:
        return None
    if theme not in ("", "light", "dark") or ("theme" in icon and not theme):
        return None
    return {"src": src, "mimeType": mime, "sizes": " ".join(sizes), "theme": theme}


def icons_split(icons: Any) -> tuple[list[JSONObject], Any]:
    """(icon rows, the rest) of a tool's icons: rows when every icon fits them, else all of them in the rest."""
    if not isinstance(icons, list) or not icons:
        return [], icons or None
    rows = [_icon_row(icon) for icon in icons]
    if any(row is None for row in rows):
        return [], icons
    return [row for row in rows if row is not None], None


def icons_join(rows: list[JSONObject], rest: Any) -> Any:
    icons = []
    for row in rows:
        icon: JSONObject = {"src": row["src"]}
        if row.get("mimeType"):
            icon["mimeType"] = row["mimeType"]
        if row.get("sizes"):
            icon["sizes"] = row["sizes"].split()
        if row.get("theme"):
            icon["theme"] = row["theme"]
        icons.append(icon)
    if icons and rest:
        raise ValidationError({"icon_rows": ["The icons are given twice: here and in Icons (JSON)."]})
    return icons or rest or None


class IconRowsWidget(forms.Widget):
    """A row of inputs per icon, and an empty row to add one (the section script adds more)."""

    parts = ("src", "mimeType", "sizes", "theme")

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        columns = [data.getlist(f"{name}_{part}") if hasattr(data, "getlist") else [] for part in self.parts]
        return [dict(zip(self.parts, values, strict=False)) for values in zip(*columns, strict=False)]

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return f"{name}_src" not in data

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        rows = [r for r in (value or []) if isinstance(r, dict)] + [{}]
        base = (attrs or {}).get("id") or f"id_{name}"

        def row(index: int, icon: JSONObject) -> tuple[Any, ...]:
            themes = format_html_join(
                "",
                '<option value="{}"{}>{}</option>',
                ((v, " selected" if icon.get("theme", "") == v else "", label) for v, label in THEMES),
            )
            return (
                base,
                index,
                index + 1,
                name,
                icon.get("src", ""),
                icon.get("mimeType", ""),
                icon.get("sizes", ""),
                themes,
            )

        rendered = format_html_join(
            "",
            '<fieldset class="icon-row" data-block><legend>Icon {2}</legend>'
            '<span class="icon-part"><label for="{0}_{1}_src">Source URL</label>'
            '<input type="text" name="{3}_src" id="{0}_{1}_src" value="{4}" maxlength="2048" size="40"></span>'
            '<span class="icon-part"><label for="{0}_{1}_mime">MIME type</label>'
            '<input type="text" name="{3}_mimeType" id="{0}_{1}_mime" value="{5}" maxlength="100" size="12"></span>'
            '<span class="icon-part"><label for="{0}_{1}_sizes">Sizes</label><input type="text" name="{3}_sizes" '
            'id="{0}_{1}_sizes" value="{6}" maxlength="200" size="12" placeholder="48x48 96x96"></span>'
            '<span class="icon-part"><label for="{0}_{1}_theme">Theme</label>'
            '<select name="{3}_theme" id="{0}_{1}_theme">{7}</select></span>'
            '<button type="button" class="button block-remove" data-block-remove hidden>Remove icon {2}</button>'
            "</fieldset>",
            (row(i, icon) for i, icon in enumerate(rows)),
        )
        return format_html(
            '<div class="icon-rows" id="{}" data-blocks>{}<button type="button" class="button block-add" '
            "data-block-add hidden>Add an icon</button></div>",
            base,
            rendered,
        )


class IconRowsField(forms.Field):
    widget = IconRowsWidget

    def to_python(self, value: Any) -> list[JSONObject]:
        rows = [r for r in (value or []) if isinstance(r, dict) and str(r.get("src", "")).strip()]
        if len(rows) > MAX_ICONS:
            raise ValidationError(f"At most {MAX_ICONS} icons.")
        cleaned = []
        for row in rows:
            theme = str(row.get("theme") or "")
            if theme not in ("", "light", "dark"):
                raise ValidationError("An icon's theme is light, dark or any.")
            cleaned.append(
                {
                    "src": str(row["src"]).strip()[:2048],
                    "mimeType": str(row.get("mimeType") or "").strip()[:100],
                    "sizes": " ".join(str(row.get("sizes") or "").split())[:200],
                    "theme": theme,
                }
            )
        return cleaned

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial) != self.to_python(data)


def _hint_field(label: str, help_text: str) -> forms.NullBooleanField:
    return forms.NullBooleanField(
        required=False,
        label=label,
        help_text=help_text,
        widget=_HintSelect(),
    )


class _HintSelect(forms.NullBooleanSelect):
    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.choices = [("unknown", "Not said"), ("true", "Yes"), ("false", "No")]


class ToolDetailsForm(forms.ModelForm):
    """Mixed into the tool form: annotations and icons as fields, joined into the JSON the services store."""

    details_fields = (
        "details_section",
        "annotation_title",
        *(field for field, _, _ in HINT_FIELDS.values()),
        "icon_rows",
    )
    details_section = forms.CharField(required=False, initial="1", widget=forms.HiddenInput)
    annotation_title = forms.CharField(required=False, max_length=200, label="Display title (annotation)")
    annotation_read_only = _hint_field(*HINT_FIELDS["readOnlyHint"][1:])
    annotation_destructive = _hint_field(*HINT_FIELDS["destructiveHint"][1:])
    annotation_idempotent = _hint_field(*HINT_FIELDS["idempotentHint"][1:])
    annotation_open_world = _hint_field(*HINT_FIELDS["openWorldHint"][1:])
    icon_rows = IconRowsField(required=False, label="Icons", help_text="Sizes: separated by spaces, e.g. 48x48 96x96.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored_details = (self.instance.annotations, self.instance.icons) if self.instance.pk else None
        values, rest = annotations_split(self.instance.annotations)
        self.initial.update(values)
        self.initial["annotations"] = rest
        rows, rest_icons = icons_split(self.instance.icons)
        self.initial["icon_rows"] = rows
        self.initial["icons"] = rest_icons
        if "annotations" in self.fields:
            self.fields["annotations"].label = "Other annotations (JSON)"
            self.fields["annotations"].help_text = "Annotations the fields above do not offer."
        if "icons" in self.fields:
            self.fields["icons"].label = "Icons (JSON)"
            self.fields["icons"].help_text = "Only for icons the rows above cannot hold."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.data.get(self.add_prefix("details_section")):
            return cleaned
        values = {name: cleaned.get(name) for name in self.details_fields}
        try:
            if "annotations" in self.fields and "annotations" not in self.errors:
                cleaned["annotations"] = annotations_join(values, cleaned.get("annotations"))
            if "icons" in self.fields and "icons" not in self.errors:
                cleaned["icons"] = icons_join(values.get("icon_rows") or [], cleaned.get("icons"))
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field, messages)
        return cleaned

    @property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        changed = list(super().changed_data)
        cleaned = getattr(self, "cleaned_data", {})
        stored = self._stored_details
        if stored is not None:
            for field, before in zip(("annotations", "icons"), stored, strict=True):
                if field in cleaned and field not in changed and cleaned[field] != before:
                    changed.append(field)
        return changed
