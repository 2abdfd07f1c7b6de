"""``LOG_FORMAT=json``: one JSON object per log line, with the request facts the request hook attaches.

The formatter writes the message, the logger, the level, the time and the ``mcp`` fields; nothing else of a record
(arbitrary ``extra`` values, arguments of a call) reaches the line, so a credential cannot slip in through them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

# The only record attribute besides the standard ones that is written out (set by the request hook).
MCP_FIELD = "mcp"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, MCP_FIELD, None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()
