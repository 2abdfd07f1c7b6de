"""The catalogs the benchmark harness measures: ``bench`` (a static, an echo and a progress tool) and
``bench-catalog`` (many static tools, for ``tools/list``). The peer server in ``bench/`` mirrors them.
"""

from __future__ import annotations

from typing import Any

from tenants.builtin.loading import CatalogSpec
from tenants.models import Backend

JSONObject = dict[str, Any]

STATIC_TEXT = "A fixed answer stored in the catalog."
CATALOG_SLUG = "bench-catalog"
CATALOG_TOOL_COUNT = 10_000


def catalog_tool_name(index: int) -> str:
    return f"catalog_tool_{index:05d}"


def catalog_tool(index: int) -> JSONObject:
    """The create-service arguments of catalog tool ``index`` (the same shape the peer lists)."""
    return {
        "name": catalog_tool_name(index),
        "description": f"Catalog tool number {index}.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "backend": Backend.STATIC,
        "config": {"content": [{"type": "text", "text": f"catalog tool {index}"}], "isError": False},
    }


BENCH = CatalogSpec(
    slug="bench",
    tenant={"name": "Benchmark", "instructions": "Tools the benchmark harness calls."},
    tools=[
        {
            "name": "static_info",
            "description": "Returns a fixed text.",
            "input_schema": {"type": "object", "properties": {}},
            "backend": Backend.STATIC,
            "config": {"content": [{"type": "text", "text": STATIC_TEXT}], "isError": False},
        },
        {
            "name": "echo",
            "description": "Returns the message it was given.",
            "input_schema": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
            "backend": Backend.PYTHON,
            "config": {"function": "demo.echo"},
        },
        {
            "name": "progress",
            "description": "Reports progress steps whose messages are the emit time in nanoseconds.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "interval_ms": {"type": "integer", "minimum": 0, "maximum": 1000},
                },
            },
            "backend": Backend.PYTHON,
            "config": {"function": "bench.progress"},
        },
    ],
)

CATALOG = CatalogSpec(slug=CATALOG_SLUG, tenant={"name": "Benchmark catalog"})
