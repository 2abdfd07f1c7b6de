"""Small real images for the tests of uploads: a 1x1 PNG that browsers draw, and a GIF header."""

from __future__ import annotations

import struct
import zlib


def tiny_png() -> bytes:
    """A real 1x1 PNG (one red pixel)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


PNG = tiny_png()
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
