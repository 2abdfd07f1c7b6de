"""What a browser without script submits for a form on an admin page, read from the page's HTML: text inputs and hidden
inputs as they stand, ticked boxes, the selected option (or the first), textareas with the line break after the tag
dropped and every line break sent as CRLF, disabled controls and buttons left out, file inputs empty."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

Posted = dict[str, list[str]]


class _FormReader(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.posted: Posted = {}
        self._textarea: tuple[str, list[str]] | None = None
        self._select: tuple[str, list[tuple[str, bool]]] | None = None
        self._option: tuple[str | None, bool, list[str]] | None = None

    def _add(self, name: str, value: str) -> None:
        self.posted.setdefault(name, []).append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value if value is not None else "" for key, value in attrs}
        if tag == "form" and values.get("id") == self.form_id:
            self.inside = True
        if not self.inside or "disabled" in values:
            return
        name = values.get("name")
        if tag == "input" and name:
            kind = values.get("type", "text").lower()
            if kind in ("checkbox", "radio"):
                if "checked" in values:
                    self._add(name, values.get("value", "on"))
            elif kind not in ("submit", "button", "image", "reset", "file"):
                self._add(name, values.get("value", ""))
        elif tag == "textarea" and name:
            self._textarea = (name, [])
        elif tag == "select" and name:
            self._select = (name, [])
        elif tag == "option" and self._select is not None:
            self._option = (values.get("value"), "selected" in values, [])

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._textarea[1].append(data)
        elif self._option is not None:
            self._option[2].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "textarea" and self._textarea is not None:
            name, parts = self._textarea
            text = "".join(parts)
            text = text[1:] if text.startswith("\n") else text
            self._add(name, text.replace("\r\n", "\n").replace("\n", "\r\n"))
            self._textarea = None
        elif tag == "option" and self._option is not None and self._select is not None:
            value, selected, text = self._option
            self._select[1].append((value if value is not None else "".join(text).strip(), selected))
            self._option = None
        elif tag == "select" and self._select is not None:
            name, options = self._select
            chosen = [value for value, selected in options if selected] or [value for value, _ in options[:1]]
            for value in chosen[-1:]:
                self._add(name, value)
            self._select = None


def form_posted(html: str, form_id: str) -> Posted:
    """The fields the form ``form_id`` on ``html`` sends when submitted untouched."""
    reader = _FormReader(form_id)
    reader.feed(html)
    assert reader.posted, f"no form {form_id!r} with fields on the page"
    return reader.posted


def with_values(posted: Posted, **values: Any) -> Posted:
    """``posted`` with some fields set (a list for several values)."""
    changed = dict(posted)
    for name, value in values.items():
        changed[name] = value if isinstance(value, list) else [value]
    return changed
