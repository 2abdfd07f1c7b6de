"""Widgets of the backend sections that take a list: text blocks a person adds and removes
(``static/admin-backend-sections.js`` adds the buttons' behaviour; without it, one empty block is offered)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# No static result needs more blocks; the request body is capped too.
MAX_BLOCKS = 50
MAX_BLOCK_CHARS = 100_000


class TextBlocksWidget(forms.Widget):
    """One textarea per block, all posted under the same name, and an empty one to add a block with."""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        return data.getlist(name) if hasattr(data, "getlist") else data.get(name)

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        blocks = [b for b in (value or []) if isinstance(b, str)] + [""]
        base = (attrs or {}).get("id") or f"id_{name}"
        rows = format_html_join(
            "",
            '<div class="content-block" data-block><label for="{0}_{1}">Text block {2}</label>'
            '<textarea name="{3}" id="{0}_{1}" rows="4" cols="80" maxlength="{5}">{4}</textarea>'
            '<button type="button" class="button block-remove" data-block-remove hidden>Remove block {2}</button>'
            "</div>",
            ((base, i, i + 1, name, text, MAX_BLOCK_CHARS) for i, text in enumerate(blocks)),
        )
        return format_html(
            '<div class="content-blocks" id="{}" data-blocks>{}'
            '<button type="button" class="button block-add" data-block-add hidden>Add a text block</button></div>',
            base,
            rows,
        )


class TextBlocksField(forms.Field):
    """A list of texts: CRLF made LF, empty blocks left out."""

    widget = TextBlocksWidget

    def to_python(self, value: Any) -> list[str]:
        if value in (None, ""):
            return []
        if isinstance(value, str):
            value = [value]
        texts = [str(v).replace("\r\n", "\n").replace("\r", "\n") for v in value]
        texts = [t for t in texts if t]
        if len(texts) > MAX_BLOCKS:
            raise forms.ValidationError(f"At most {MAX_BLOCKS} text blocks.")
        if any(len(t) > MAX_BLOCK_CHARS for t in texts):
            raise forms.ValidationError(f"A text block holds at most {MAX_BLOCK_CHARS} characters.")
        return texts

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial) != self.to_python(data)
