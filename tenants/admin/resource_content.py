"""A resource's content on its form: the text as typed, or a file uploaded as its binary content (stored as base64,
capped, an image's MIME type taken from its first bytes when none is given). The base64 box stays, under
Advanced, for content pasted as base64; a stored image is shown as a preview."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from tenants.admin.uploads import (
    MAX_UPLOAD_BYTES,
    base64_decode,
    base64_encode,
    image_type,
    preview_url,
    size_words,
    upload_read,
)

CONTENT_FIELDS = ("text", "blob", "mime_type")
FILE_HELP = f"Its binary content, stored as base64; at most {size_words(MAX_UPLOAD_BYTES)}. Empty: keep what is stored."


class ResourceContentForm(forms.ModelForm):
    """Mixed into the resource form: a file upload that becomes the blob."""

    content_fields = ("blob_file",)
    blob_file = forms.FileField(required=False, label="File", help_text=FILE_HELP)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        instance = self.instance
        self._stored_content = {f: getattr(instance, f) for f in CONTENT_FIELDS} if instance.pk else None
        if "blob" in self.fields:
            self.fields["blob"].label = "Binary content (base64)"
            self.fields["blob"].help_text = "The stored file as base64; paste base64 here only if you have no file."
        blob = instance.blob if instance.pk is not None else None
        if blob is not None and "blob_file" in self.fields:
            raw = base64_decode(blob)
            stored = size_words(len(raw)) if raw is not None else "not base64"
            url = preview_url(blob, instance.mime_type)
            self.fields["blob_file"].help_text = format_html(
                '{} <span class="resource-stored">Stored: {}{}.</span>{}',
                FILE_HELP,
                stored,
                f", {instance.mime_type}" if instance.mime_type else "",
                format_html('<img class="block-preview" src="{}" alt="The stored image">', url) if url else "",
            )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("blob_file")
        if not upload:
            return cleaned
        try:
            raw = upload_read(upload)
        except ValidationError as exc:
            self.add_error("blob_file", exc)
            return cleaned
        stored_blob = self.instance.blob if self.instance.pk is not None else None
        if cleaned.get("text") is not None:
            self.add_error("blob_file", "This resource has text: clear the Text box to store a file instead.")
        elif cleaned.get("blob") not in (None, stored_blob):
            self.add_error("blob_file", "The content is given twice: as a file and as Binary content (base64).")
        else:
            cleaned["blob"], cleaned["text"] = base64_encode(raw), None
            if not cleaned.get("mime_type"):
                cleaned["mime_type"] = image_type(raw[:12]) or ""
        return cleaned

    @property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        changed = list(super().changed_data)
        cleaned = getattr(self, "cleaned_data", {})
        if self._stored_content is not None:
            for field, before in self._stored_content.items():
                if field in cleaned and field not in changed and cleaned[field] != before:
                    changed.append(field)
        return changed
