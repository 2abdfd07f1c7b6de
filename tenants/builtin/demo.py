"""Python functions behind the demo tenant: small tools that show each thing a tool may do while it runs."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_core.context import ToolContext
from mcp_core.errors import ToolError
from tenants.backends.registry import python_tool

JSONObject = dict[str, Any]

NAME_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name", "description": "What should we call you?"}},
    "required": ["name"],
}


@python_tool("demo.echo")
async def echo(ctx: ToolContext, message: str) -> str:
    return message


@python_tool("demo.add")
async def add(ctx: ToolContext, a: float, b: float) -> JSONObject:
    # A dict becomes structuredContent plus the same JSON as text, matching the tool's outputSchema.
    return {"sum": a + b}


@python_tool("demo.count_slowly")
async def count_slowly(ctx: ToolContext, steps: int = 5, delay_ms: int = 500) -> str:
    for step in range(1, steps + 1):
        await asyncio.sleep(delay_ms / 1000)
        await ctx.report_progress(step, steps, f"Counted {step} of {steps}")
    return f"Counted to {steps}."


@python_tool("demo.ask_user_name")
async def ask_user_name(ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA)
    action = answer.get("action")
    if action == "accept":
        name = (answer.get("content") or {}).get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolError("The answer held no name.")
        return f"Hello, {name.strip()}!"
    if action == "decline":
        return "You chose not to share your name."
    return "You dismissed the question."


@python_tool("demo.summarize")
async def summarize(ctx: ToolContext, text: str, max_words: int = 50) -> str:
    request = f"Summarize the following text in at most {max_words} words.\n\n{text}"
    result = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": request}}],
        max_tokens=max(64, max_words * 3),
        systemPrompt="You write short, faithful summaries.",
    )
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    if not texts:
        raise ToolError("The client's model returned no text.")
    return "\n".join(texts)


@python_tool("demo.list_client_roots")
async def list_client_roots(ctx: ToolContext) -> str:
    roots = await ctx.list_roots()
    if not roots:
        return "The client shares no roots."
    lines = [f"- {root.get('name') or root.get('uri')}: {root.get('uri')}" for root in roots]
    return "The client shares these roots:\n" + "\n".join(lines)
