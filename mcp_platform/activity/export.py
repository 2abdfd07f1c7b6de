"""Streaming exports of activity rows (CSV and JSON Lines): the rows of a queryset the caller already scoped."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from mcp_platform.activity.services import CALL_COLUMNS

# A stored call's columns, the tenant by its slug rather than its id, and the time first.
EXPORT_FIELDS = ("at", "tenant__slug", *(name for name in CALL_COLUMNS if name not in ("tenant_id", "at")))
HEADER = tuple("tenant" if name == "tenant__slug" else name for name in EXPORT_FIELDS)
CHUNK_ROWS = 2000
# A spreadsheet runs a cell starting with these as a formula; tool names and client names come from clients.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class _Line:
    """What ``csv.writer`` writes to: it hands each formatted line back instead of buffering it."""

    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        value = json.dumps(value, separators=(",", ":"))
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _rows(queryset: QuerySet[Any]) -> Iterator[tuple[Any, ...]]:
    return queryset.values_list(*EXPORT_FIELDS).iterator(chunk_size=CHUNK_ROWS)


def csv_lines(queryset: QuerySet[Any]) -> Iterable[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(HEADER)
    for row in _rows(queryset):
        yield writer.writerow([_cell(value.isoformat() if i == 0 else value) for i, value in enumerate(row)])


def jsonl_lines(queryset: QuerySet[Any]) -> Iterable[str]:
    for row in _rows(queryset):
        record = dict(zip(HEADER, row, strict=True))
        record["at"] = record["at"].isoformat()
        yield json.dumps(record, separators=(",", ":")) + "\n"


def export_response(queryset: QuerySet[Any], fmt: str, filename: str) -> StreamingHttpResponse:
    """``fmt`` ``csv`` or ``jsonl``; the body is produced row by row as the client reads it."""
    if fmt == "csv":
        lines, content_type = csv_lines(queryset), "text/csv; charset=utf-8"
    else:
        lines, content_type = jsonl_lines(queryset), "application/jsonl; charset=utf-8"
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
