"""``LOG_FORMAT=json``: one JSON object per log line, with the request facts the request hook attaches; and the
filter that keeps credentials in outbound URLs out of every log line, whatever the format.

The formatter writes the message, the logger, the level, the time and the ``mcp`` fields; nothing else of a record
(arbitrary ``extra`` values, arguments of a call) reaches the line, so a credential cannot slip in through them.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any
from urllib.parse import urlsplit

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


# A URL inside a log line: up to whitespace or a quote (httpx writes ``HTTP Request: GET <url> "HTTP/1.1 200 OK"``).
_URL = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)


def url_for_log(url: str) -> str:
    """``url`` without what may carry a credential: its query (an API key), user information and fragment."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}" + ("?…" if parts.query else "")


class OutboundUrlFilter(logging.Filter):
    """Rewrites the URLs of an outbound client's log lines (httpx's and httpx2's ``HTTP Request: ...`` at INFO)
    so that no query string or user information reaches a log: an HTTP tool's key may travel in either.

    A filter on the client's own logger, so it holds whatever handlers and formats a process configures (Celery
    replaces the root handlers of its worker)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(self._clean(arg) for arg in args)
        if isinstance(record.msg, str) and "://" in record.msg:
            record.msg = _URL.sub(lambda found: url_for_log(found.group()), record.msg)
        return True

    @staticmethod
    def _clean(arg: object) -> object:
        if isinstance(arg, int | float):
            return arg  # a %d placeholder needs its number
        # httpx.URL and httpx2.URL are not str: their text is what would be logged.
        text = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
        return _URL.sub(lambda found: url_for_log(found.group()), text) if "://" in text else arg
