"""Files people upload in the catalog admin: read up to a cap named in the error, images known by their first
bytes (never by their name or the type the browser claims), and the base64 the catalog stores binary content as.
A stored image is shown again as a ``data:`` URL only when it passes the same checks."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

from django.core.exceptions import ValidationError

# An image in a static result goes out with every call, and a blob with every read: a cap keeps both small.
MAX_UPLOAD_BYTES = 1024 * 1024
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
IMAGE_ACCEPT = ",".join(IMAGE_TYPES)
NOT_AN_IMAGE = "The file is not a PNG, JPEG, GIF or WebP image (judged by its first bytes, not its name)."
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def size_words(size: int) -> str:
    """``size`` bytes as people read it: 812 bytes, 12 KiB, 1.4 MiB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    mebibytes = size / (1024 * 1024)
    return f"{mebibytes:.0f} MiB" if mebibytes.is_integer() else f"{mebibytes:.1f} MiB"


def too_big(size: int | None, limit: int) -> str:
    """The refusal of a file of ``size`` bytes (None: not known, but more than ``limit``)."""
    if size is None:
        return f"The file is more than {size_words(limit)}; at most {size_words(limit)} can be stored here."
    if size - limit < 1024 * 1024 / 20:  # just over: rounded to a tenth of a MiB, the two would hardly differ
        return f"The file is {size:,} bytes; at most {size_words(limit)} ({limit:,} bytes) can be stored here."
    return f"The file is {size_words(size)}; at most {size_words(limit)} can be stored here."


def image_type(head: bytes) -> str | None:
    """The MIME type of the image whose file starts with ``head`` (12 bytes suffice), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def upload_read(upload: Any, *, limit: int = MAX_UPLOAD_BYTES) -> bytes:
    """The bytes of an uploaded file. Raises ``ValidationError`` for a file over ``limit`` (said in the message)."""
    size = getattr(upload, "size", None)
    if isinstance(size, int) and size > limit:
        raise ValidationError(too_big(size, limit))
    upload.seek(0)
    data: bytes = upload.read(limit + 1)
    if len(data) > limit:
        raise ValidationError(too_big(None, limit))
    return data


def image_checked(data: bytes) -> str:
    """The MIME type of image ``data`` by its magic bytes. Raises ``ValidationError`` when it is no image we take."""
    mime = image_type(data[:12])
    if mime is None:
        raise ValidationError(NOT_AN_IMAGE)
    return mime


def base64_encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def base64_decode(text: str) -> bytes | None:
    """The bytes of strict, padded base64 ``text``, or None."""
    if not isinstance(text, str) or not _BASE64.fullmatch(text):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def stored_image_problem(data: Any, mime: Any, *, limit: int = MAX_UPLOAD_BYTES) -> str | None:
    """Why base64 ``data`` with ``mime`` is not an image the admin takes (an upload would have been refused), or
    None."""
    if mime not in IMAGE_TYPES:
        return "Only PNG, JPEG, GIF and WebP images are taken."
    raw = base64_decode(data)
    if raw is None:
        return "The image is not base64."
    if len(raw) > limit:
        return too_big(len(raw), limit).replace("The file", "The image", 1)
    if image_type(raw[:12]) != mime:
        return f"The image's bytes are not {mime}."
    return None


def image_digest(data: str, mime: str) -> str:
    """What a page posts back to keep a stored image without sending it again."""
    return hashlib.sha256(f"{mime}\n{data}".encode("ascii", "replace")).hexdigest()


def preview_url(data: str, mime: str) -> str | None:
    """A ``data:`` URL for an ``<img>`` of a checked image, or None. Only the four raster types pass, whose
    decoders run no script; the admin sends no Content-Security-Policy, so ``img-src`` allows ``data:``."""
    if stored_image_problem(data, mime) is not None:
        return None
    return f"data:{mime};base64,{data}"
