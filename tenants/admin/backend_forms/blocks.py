"""A static result's content as blocks of the MCP content types a person fills in: text, an uploaded image, an
embedded text resource, a link to a resource. A block is stored exactly as ``tools/call`` returns it; a content
list whose every block comes back unchanged from the fields is edited in them, any other stays whole in the
Advanced (JSON) box (``content_fits``).

An image already stored is posted back by its digest, not its bytes; a file chosen on a page that then showed an
error is posted back as a ``data:`` URL, checked again like an upload.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.html import format_html
from django.utils.safestring import SafeString

from mcp_core.uris import split_uri
from tenants.admin.backend_forms.widgets import (
    DisplayRows,
    Part,
    Row,
    RowsField,
    RowsWidget,
    line_checked,
    line_typed,
    text_typed,
)
from tenants.admin.uploads import (
    IMAGE_ACCEPT,
    MAX_UPLOAD_BYTES,
    base64_decode,
    base64_encode,
    image_checked,
    image_digest,
    preview_url,
    size_words,
    stored_image_problem,
    upload_read,
)

JSONObject = dict[str, Any]

KINDS = (
    ("text", "Text"),
    ("image", "Image"),
    ("resource", "Embedded resource"),
    ("resource_link", "Resource link"),
)
KIND_NOUNS = {
    "text": "a text block",
    "image": "an image",
    "resource": "an embedded resource",
    "resource_link": "a resource link",
}
MAX_BLOCKS = 50
MAX_TEXT = 100_000
MAX_URI, MAX_NAME, MAX_DESCRIPTION, MAX_MIME = 2048, 255, 2000, 255
# Which parts each kind reads (the others must be empty), by part key.
USED = {
    "text": ("text",),
    "image": ("image", "kept"),
    "resource": ("uri", "mime", "text"),
    "resource_link": ("uri", "name", "description", "mime"),
}
PART_NAMES = {
    "text": "Text",
    "image": "Image file",
    "kept": "Image",
    "uri": "URI",
    "name": "Name",
    "description": "Description",
    "mime": "MIME type",
}
KEPT_DIGEST, KEPT_DATA = "sha256:", "data:"


def _uri_checked(uri: str, kind: str) -> str:
    if not uri:
        raise ValidationError(f"{'an embedded resource' if kind == 'resource' else 'a resource link'} needs a URI.")
    if len(uri) > MAX_URI:
        raise ValidationError(f"a URI has at most {MAX_URI} characters.")
    parts = split_uri(uri)
    if parts is None or not parts.scheme:
        raise ValidationError(f"{uri!r} is not a URI with a scheme, such as https:// or docs://.")
    return uri


def _kept_image(kept: str, known: dict[str, JSONObject]) -> JSONObject:
    """The image block a page posted back: a stored one by digest, or an unsaved upload as a ``data:`` URL."""
    if kept.startswith(KEPT_DIGEST):
        block = known.get(kept.removeprefix(KEPT_DIGEST))
        if block is None:
            raise ValidationError("the image is no longer stored: choose its file again.")
        return block
    head, _, data = kept.partition(",")
    mime = head.removeprefix(KEPT_DATA).removesuffix(";base64")
    problem = stored_image_problem(data, mime) if head.startswith(KEPT_DATA) else "choose an image file."
    if problem is not None:
        raise ValidationError(problem)
    return {"type": "image", "data": data, "mimeType": mime}


def _image(row: Row, known: dict[str, JSONObject]) -> JSONObject:
    upload = row.get("image")
    if upload:
        raw = upload_read(upload)
        return {"type": "image", "data": base64_encode(raw), "mimeType": image_checked(raw)}
    kept = str(row.get("kept") or "")
    if not kept:
        raise ValidationError("choose an image file.")
    return _kept_image(kept, known)


def block_clean(row: Row, known: dict[str, JSONObject]) -> JSONObject | None:
    """The content block of a posted ``row``, or None for an empty row. Raises ``ValidationError`` saying what is
    wrong (the caller names the block)."""
    kind = row.get("kind") or "text"
    if kind not in USED:
        raise ValidationError("choose text, image, embedded resource or resource link.")
    text = text_typed(row.get("text"))
    filled = {key for key in PART_NAMES if key != "text" and row.get(key) and line_typed(row.get(key))}
    if text:
        filled.add("text")
    if row.get("image"):
        filled.add("image")
    if not filled:
        return None
    stray = [PART_NAMES[key] for key in PART_NAMES if key in filled and key not in USED[kind]]
    if stray:
        it = "it" if len(stray) == 1 else "them"
        raise ValidationError(
            f"{KIND_NOUNS[kind]} has no {' or '.join(stray)}: clear {it}, or choose the kind of block that has {it}."
        )
    if len(text) > MAX_TEXT:
        raise ValidationError(f"a text has at most {MAX_TEXT} characters.")
    if kind == "text":
        return {"type": "text", "text": text}
    if kind == "image":
        return _image(row, known)
    uri = _uri_checked(line_checked(row, "uri", PART_NAMES["uri"], MAX_URI), kind)
    mime = line_checked(row, "mime", PART_NAMES["mime"], MAX_MIME)
    if kind == "resource":
        resource: JSONObject = {"uri": uri}
        if mime:
            resource["mimeType"] = mime
        resource["text"] = text
        return {"type": "resource", "resource": resource}
    name = line_checked(row, "name", PART_NAMES["name"], MAX_NAME)
    if not name:
        raise ValidationError("a resource link needs a name.")
    link: JSONObject = {"type": "resource_link", "uri": uri, "name": name}
    description = line_checked(row, "description", PART_NAMES["description"], MAX_DESCRIPTION)
    if description:
        link["description"] = description
    if mime:
        link["mimeType"] = mime
    return link


def block_row(block: JSONObject) -> Row:
    """The row that shows ``block`` (the inverse of ``block_clean`` for a block that fits)."""
    kind = block.get("type")
    if kind == "text":
        return {"kind": "text", "text": block.get("text", "")}
    if kind == "image":
        data, mime = block.get("data", ""), block.get("mimeType", "")
        return {"kind": "image", "kept": KEPT_DIGEST + image_digest(data, mime), "preview": (data, mime)}
    if kind == "resource":
        resource = block.get("resource") or {}
        return {
            "kind": "resource",
            "uri": resource.get("uri", ""),
            "mime": resource.get("mimeType", ""),
            "text": resource.get("text", ""),
        }
    return {
        "kind": "resource_link",
        "uri": block.get("uri", ""),
        "name": block.get("name", ""),
        "description": block.get("description", ""),
        "mime": block.get("mimeType", ""),
    }


def images_known(content: Any) -> dict[str, JSONObject]:
    """The image blocks of stored ``content`` a page may keep by digest."""
    images = [
        block
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict) and block.get("type") == "image" and set(block) == {"type", "data", "mimeType"}
    ]
    return {
        image_digest(block["data"], block["mimeType"]): block
        for block in images
        if stored_image_problem(block["data"], block["mimeType"]) is None
    }


def _block_fits(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") not in USED:
        return False
    row = {key: value for key, value in block_row(block).items() if key != "preview"}
    try:
        return block_clean(row, images_known([block])) == block
    except ValidationError:
        return False


def content_fits(content: Any) -> bool:
    """Whether every block of ``content`` comes back unchanged from the block fields (an empty text block does
    not: an empty row is no block)."""
    if not isinstance(content, list) or len(content) > MAX_BLOCKS:
        return False
    return all(_block_fits(block) for block in content)


class ContentBlocksWidget(RowsWidget):
    parts = (
        Part("kind", "Kind", control="select", choices=KINDS),
        Part("text", "Text", control="textarea", kinds=("text", "resource"), maxlength=MAX_TEXT),
        Part(
            "image",
            "Image file",
            control="file",
            kinds=("image",),
            accept=IMAGE_ACCEPT,
            help=f"PNG, JPEG, GIF or WebP, at most {size_words(MAX_UPLOAD_BYTES)}.",
        ),
        Part("kept", "", control="hidden", kinds=("image",)),
        Part("uri", "URI", kinds=("resource", "resource_link"), maxlength=MAX_URI),
        Part("name", "Name", kinds=("resource_link",), maxlength=MAX_NAME),
        Part("description", "Description (optional)", kinds=("resource_link",), maxlength=MAX_DESCRIPTION),
        Part("mime", "MIME type (optional)", kinds=("resource", "resource_link"), maxlength=MAX_MIME),
    )
    row_label = "Block"
    add_label = "Add a block"
    extra = 2
    max_rows = MAX_BLOCKS
    needs_multipart_form = True

    def render_extra(self, name: str, base: str, index: int, part: Part, row: Row) -> SafeString:
        if part.key != "image" or not row.get("preview"):
            return SafeString("")
        data, mime = row["preview"]
        url = preview_url(data, mime)
        size = size_words(len(base64_decode(data) or b""))
        if url is None:
            return SafeString("")
        return format_html(
            '<span class="block-preview" data-block-preview><img src="{}" alt="The image of block {}" '
            'loading="lazy"><span class="help">Stored: {}, {}. Choose a file to replace it.</span></span>',
            url,
            index + 1,
            mime,
            size,
        )


class ContentBlocksField(RowsField):
    widget = ContentBlocksWidget
    item_name = "block"
    max_items = MAX_BLOCKS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The stored images a page may keep by digest: the form sets them (assigns, never mutates) from its entry.
        self.known_images: dict[str, JSONObject] = {}

    def row_clean(self, row: Row) -> JSONObject | None:
        return block_clean(row, self.known_images)

    def item_row(self, item: Any) -> Row:
        return block_row(item) if isinstance(item, dict) else {}

    def bound_data(self, data: Any, initial: Any) -> Any:
        """The rows as posted, shown again after an error: a file chosen and good is kept (it cannot be chosen
        for the person again), an image kept by digest shows its preview."""
        rows = DisplayRows()
        for posted in data or []:
            row = dict(posted)
            upload = row.pop("image", None)
            kept = str(row.get("kept") or "")
            image: JSONObject | None = None
            try:
                if upload:
                    raw = upload_read(upload)
                    image = {"type": "image", "data": base64_encode(raw), "mimeType": image_checked(raw)}
                    row["kept"] = f"{KEPT_DATA}{image['mimeType']};base64,{image['data']}"
                elif kept:
                    image = _kept_image(kept, self.known_images)
            except ValidationError:
                image = None
            if image is not None:
                row["preview"] = (image["data"], image["mimeType"])
            rows.append(row)
        return rows
