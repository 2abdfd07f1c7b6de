"""``TenantCatalog``: one tenant's tools, resources and prompts as the protocol's ``Catalog`` seam; ``ServerCatalog``:
the part of it one of the tenant's servers selects.

It turns rows into wire-shaped dicts (optional fields left out when empty) and runs the backends.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, TypeVar

import orjson

from mcp_core.caching import CacheHints
from mcp_core.catalog import Page, PromptDefinition, ToolDefinition
from mcp_core.context import ToolContext
from mcp_core.tasks import TaskSupport
from mcp_core.text import storable
from mcp_core.uritemplate import UriTemplate
from mcp_infra.telemetry import spans
from tenants import selectors
from tenants.backends import prompt_render, resource_read, template_read, tool_continues_as_task, tool_invoke
from tenants.models import Prompt, Resource, ResourceTemplate, Server, Tenant, Tool
from tenants.selection import ItemKind, Selection, aserver_members, selection_of

JSONObject = dict[str, Any]
EntryT = TypeVar("EntryT", Tool, Prompt)


def _put(wire: JSONObject, key: str, value: Any) -> None:
    # Empty strings, None and empty containers are "not set": the wire leaves optional fields out.
    if value not in (None, "", [], {}):
        wire[key] = value


def tool_wire(tool: Tool) -> JSONObject:
    """``{name, title?, description, inputSchema, outputSchema?, annotations?, icons?, execution?}``."""
    wire: JSONObject = {"name": tool.name}
    _put(wire, "title", tool.title)
    wire["description"] = tool.description
    wire["inputSchema"] = tool.input_schema
    _put(wire, "outputSchema", tool.output_schema)
    _put(wire, "annotations", tool.annotations)
    _put(wire, "icons", tool.icons)
    # "forbidden" is what an absent execution.taskSupport means.
    if tool.task_support != TaskSupport.FORBIDDEN:
        wire["execution"] = {"taskSupport": tool.task_support}
    return wire


def resource_wire(resource: Resource) -> JSONObject:
    """``{uri, name, title?, description?, mimeType?, annotations?}``."""
    wire: JSONObject = {"uri": resource.uri, "name": resource.name}
    _put(wire, "title", resource.title)
    _put(wire, "description", resource.description)
    _put(wire, "mimeType", resource.mime_type)
    _put(wire, "annotations", resource.annotations)
    return wire


def resource_contents(resource: Resource) -> list[JSONObject]:
    """``[{uri, mimeType?, text | blob}]``: what ``resources/read`` returns for a concrete resource."""
    content: JSONObject = {"uri": resource.uri}
    _put(content, "mimeType", resource.mime_type)
    if resource.blob is not None:
        content["blob"] = resource.blob
    else:
        content["text"] = resource.text or ""
    return [content]


def resource_template_wire(template: ResourceTemplate) -> JSONObject:
    """``{uriTemplate, name, title?, description?, mimeType?}``."""
    wire: JSONObject = {"uriTemplate": template.uri_template, "name": template.name}
    _put(wire, "title", template.title)
    _put(wire, "description", template.description)
    _put(wire, "mimeType", template.mime_type)
    return wire


def prompt_wire(prompt: Prompt) -> JSONObject:
    """``{name, title?, description?, arguments?}``."""
    wire: JSONObject = {"name": prompt.name}
    _put(wire, "title", prompt.title)
    _put(wire, "description", prompt.description)
    _put(wire, "arguments", prompt.arguments)
    return wire


@lru_cache(maxsize=4096)
def _parsed(uri_template: str) -> UriTemplate:
    # Keyed by the template text alone (no tenant state): the same text always parses the same way.
    return UriTemplate.parse(uri_template)


def _prefixed(candidates: list[str], prefix: str) -> list[str]:
    folded = prefix.casefold()
    return [value for value in candidates if value.casefold().startswith(folded)]


class TenantCatalog:
    """The ``mcp_core.catalog.Catalog`` of one tenant as one caller sees it. Cheap to build: one per request.

    ``granted`` are the OAuth scopes of the caller's token (None where no authorization is in play): tools that
    require scopes beyond them are neither listed nor found.
    """

    def __init__(self, tenant: Tenant, granted: frozenset[str] | None = None) -> None:
        self.tenant = tenant
        self.granted = granted

    async def _among(self, kind: ItemKind) -> frozenset[str] | None:
        """The keys of the items of ``kind`` this catalog serves; None: every item of the tenant."""
        return None

    def _own(self, handle: object, model: type[EntryT], wire: JSONObject) -> EntryT:
        """``handle`` as this tenant's ``model`` row. Raises ValueError for anything else: a definition found through
        another tenant's catalog never runs here."""
        if not isinstance(handle, model) or handle.tenant_id != self.tenant.pk:
            what = model._meta.verbose_name
            raise ValueError(f"{what} {wire.get('name')!r} does not belong to tenant {self.tenant.slug!r}")
        if not model.tenant.is_cached(handle):  # type: ignore[attr-defined]
            # The backends label their metrics with the tenant's slug; no query for it on the async path.
            handle.tenant = self.tenant
        return handle

    # ---- tools -------------------------------------------------------------------------------------

    async def list_cache_limits(self) -> dict[str, CacheHints]:
        """What the tenant's upstreams allowed each list to promise (``selectors.aupstream_list_cache_hints``)."""
        return await selectors.aupstream_list_cache_hints(tenant=self.tenant)

    async def list_tools(self, *, after: str | None, limit: int) -> Page:
        found = await selectors.atool_list(
            tenant=self.tenant, after=after, limit=limit, granted=self.granted, among=await self._among("tools")
        )
        last = found.items[-1].name if found.items else None
        limits = await self.list_cache_limits()
        return Page([tool_wire(t) for t in found.items], found.has_more, last, limits.get("tools"))

    async def get_tool(self, name: str) -> ToolDefinition | None:
        among = await self._among("tools")
        if among is not None and name not in among:
            return None
        tool = await selectors.atool_get(tenant=self.tenant, name=name)
        if tool is None or not selectors.tool_visible(tool, self.granted):
            return None
        return ToolDefinition(
            wire=tool_wire(tool),
            handle=tool,
            task_support=TaskSupport(tool.task_support),
            continues_as_task=tool_continues_as_task(tool),
        )

    async def invoke_tool(self, tool: ToolDefinition, arguments: JSONObject, ctx: ToolContext) -> Any:
        """Run the tool's backend. Raises ``ToolError`` (an isError result) and whatever the tool raises."""
        row = self._own(tool.handle, Tool, tool.wire)
        attributes = {"gen_ai.tool.name": row.name, "mcp_platform.tool.backend": row.backend}
        with spans.span(f"tool {row.name}", attributes=attributes):
            return await tool_invoke(row, arguments, ctx)

    # ---- resources ---------------------------------------------------------------------------------

    async def list_resources(self, *, after: str | None, limit: int) -> Page:
        among = await self._among("resources")
        found = await selectors.aresource_list(tenant=self.tenant, after=after, limit=limit, among=among)
        last = found.items[-1].uri if found.items else None
        limits = await self.list_cache_limits()
        return Page([resource_wire(r) for r in found.items], found.has_more, last, limits.get("resources"))

    async def read_resource(self, uri: str, ctx: ToolContext) -> list[JSONObject] | None:
        """A concrete resource first, then the first template (by name) that matches; None otherwise (at once for
        a URI that cannot be stored, so could name nothing)."""
        if not storable(uri):
            return None
        resources = await self._among("resources")
        resource = (
            await selectors.aresource_get(tenant=self.tenant, uri=uri)
            if resources is None or uri in resources
            else None
        )
        if resource is not None:
            proxied = await resource_read(resource, ctx)
            return proxied if proxied is not None else resource_contents(resource)
        templates = await self._among("templates")
        for template in await selectors.aresource_templates_all(tenant=self.tenant):
            if templates is not None and template.uri_template not in templates:
                continue
            variables = _parsed(template.uri_template).match(uri)
            if variables is not None:
                return await template_read(template, uri, variables, ctx)
        return None

    async def list_resource_templates(self, *, after: str | None, limit: int) -> Page:
        among = await self._among("templates")
        found = await selectors.aresource_template_list(tenant=self.tenant, after=after, limit=limit, among=among)
        last = found.items[-1].name if found.items else None
        limits = await self.list_cache_limits()
        wires = [resource_template_wire(t) for t in found.items]
        return Page(wires, found.has_more, last, limits.get("resource_templates"))

    # ---- prompts -----------------------------------------------------------------------------------

    async def list_prompts(self, *, after: str | None, limit: int) -> Page:
        among = await self._among("prompts")
        found = await selectors.aprompt_list(tenant=self.tenant, after=after, limit=limit, among=among)
        last = found.items[-1].name if found.items else None
        limits = await self.list_cache_limits()
        return Page([prompt_wire(p) for p in found.items], found.has_more, last, limits.get("prompts"))

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        among = await self._among("prompts")
        if among is not None and name not in among:
            return None
        prompt = await selectors.aprompt_get(tenant=self.tenant, name=name)
        if prompt is None:
            return None
        return PromptDefinition(wire=prompt_wire(prompt), handle=prompt, messages=prompt.messages)

    async def render_prompt(self, prompt: PromptDefinition, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        """Run the prompt's backend; the protocol layer has checked required arguments. Raises ``PromptError`` and
        whatever a prompt function raises."""
        return await prompt_render(self._own(prompt.handle, Prompt, prompt.wire), arguments, ctx)

    # ---- completion --------------------------------------------------------------------------------

    async def complete(self, ref: JSONObject, argument: JSONObject, context: JSONObject) -> list[str] | None:
        """Stored candidates for a prompt argument or template variable, by case-insensitive prefix.

        None when the prompt or template is unknown; an empty list for an argument with no candidates.
        """
        completions: Any
        if ref.get("type") == "ref/prompt":
            name = str(ref.get("name"))
            prompts = await self._among("prompts")
            prompt = (
                await selectors.aprompt_get(tenant=self.tenant, name=name)
                if prompts is None or name in prompts
                else None
            )
            if prompt is None:
                return None
            completions = prompt.completions
        elif ref.get("type") == "ref/resource":
            uri_template = str(ref.get("uri"))
            templates = await self._among("templates")
            if templates is not None and uri_template not in templates:
                return None
            template = await selectors.aresource_template_by_uri_template(tenant=self.tenant, uri_template=uri_template)
            if template is None:
                return None
            completions = template.completions
        else:
            return None
        candidates = completions.get(str(argument.get("name")), []) if isinstance(completions, dict) else []
        return _prefixed([str(c) for c in candidates], str(argument.get("value", "")))


# Items per page when a server's whole list is read for its digest.
DIGEST_PAGE = 500


class ServerCatalog(TenantCatalog):
    """The part of a tenant's catalog that one of its servers selects (``tenants.selection``), as one caller sees it:
    items outside the selection are neither listed nor found, as if the tenant had none."""

    def __init__(self, tenant: Tenant, server: Server, granted: frozenset[str] | None = None) -> None:
        super().__init__(tenant, granted)
        self.server = server
        self._selection: Selection | None = None

    @property
    def selection(self) -> Selection:
        if self._selection is None:
            self._selection = selection_of(self.server)
        return self._selection

    async def _among(self, kind: ItemKind) -> frozenset[str] | None:
        return await aserver_members(tenant=self.tenant, selection=self.selection, kind=kind)

    async def serves_resource(self, uri: str) -> bool:
        """Whether a read of ``uri`` reaches this server's items (a selected resource, or a selected template's
        match): only then do its subscribers hear that the resource changed."""
        if uri in (await self._among("resources") or ()):
            return True
        templates = await self._among("templates") or frozenset()
        return any(_parsed(template).match(uri) is not None for template in templates)

    async def list_digest(self, kind: str) -> str:
        """A digest of everything the server lists of ``kind`` (``tools``, ``resources`` with the templates, or
        ``prompts``, as catalog changes name them): a changed digest is a changed list for its clients."""
        readers = {
            "tools": (self.list_tools,),
            "resources": (self.list_resources, self.list_resource_templates),
            "prompts": (self.list_prompts,),
        }.get(kind, ())
        digest = hashlib.sha256()
        for read in readers:
            after: str | None = None
            while True:
                page = await read(after=after, limit=DIGEST_PAGE)
                digest.update(orjson.dumps(page.items, option=orjson.OPT_SORT_KEYS))
                if not page.has_more or page.last_key is None:
                    break
                after = page.last_key
            digest.update(b"\x00")
        return digest.hexdigest()
