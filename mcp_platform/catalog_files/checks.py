"""The checks a file passes before its plan is shown: the objects it would write are checked by the validation the
admin and the services use (the same messages), the names it uses must be free of a source's items, every secret
it names must be one the tenant has (a file names secrets, it never holds them), and every source, item and server a
server or a rate limit names must be the tenant's once the file is applied."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError

from mcp_platform.catalog_files.loading import LoadedFile, Problem
from mcp_platform.catalog_files.sections import (
    OPENAPI_SOURCES,
    PERIOD_SECONDS,
    PROMPTS,
    RATE_LIMITS,
    RESOURCE_TEMPLATES,
    RESOURCES,
    SECTIONS,
    SERVERS,
    TOOLS,
    UPSTREAMS,
    Holder,
    Section,
    holder_of,
)
from mcp_platform.catalog_files.selections import ITEM_LISTS, openapi_source_named, selection_entries_of
from mcp_platform.catalog_files.state import Entry, State
from mcp_platform.quotas.models import RateCeiling, RateLimit
from mcp_platform.quotas.services import rate_limit_validate
from tenants.federation.overrides import overrides_errors
from tenants.federation.services import upstream_validate
from tenants.models import Prompt, Resource, ResourceTemplate, Server, Tenant, Tool, Upstream
from tenants.openapi.servers import is_web_url
from tenants.outbound_auth import auth_secret_names
from tenants.secret_references import secret_names_in, secrets_missing
from tenants.servers import server_validate
from tenants.validation import (
    prompt_validate,
    resource_template_validate,
    resource_validate,
    tenant_validate,
    tool_validate,
)

JSONObject = dict[str, Any]


def _messages(exc: ValidationError) -> dict[str, list[str]]:
    return exc.message_dict if hasattr(exc, "error_dict") else {"__all__": list(exc.messages)}


def _problems_of(
    exc: ValidationError, loaded: LoadedFile, section: Section, entry: Entry, *, fields: tuple[str, ...] = ()
) -> Iterator[Problem]:
    at = (section.name, entry.index if entry.index is not None else 0)
    for field, messages in _messages(exc).items():
        path = (*at, field) if field in (fields or section.fields) else at
        for message in messages:
            named = message if field in ("__all__", *section.fields) else f"{field}: {message}"
            yield loaded.problem(path, named)


def _instance(model: type[Any], tenant: Tenant, entry: Entry, **fields: Any) -> Any:
    """The row ``entry`` would be: its stored row's identity (so its own key is no conflict) with the file's fields
    (``fields``: some of them as the model holds them)."""
    instance = model(pk=getattr(entry.row, "pk", None), tenant=tenant, **{**entry.fields, **fields})
    instance._state.adding = entry.row is None
    return instance


def _tool(tenant: Tenant, entry: Entry) -> None:
    tool_validate(_instance(Tool, tenant, entry))


def _resource(tenant: Tenant, entry: Entry) -> None:
    resource_validate(_instance(Resource, tenant, entry))


def _template(tenant: Tenant, entry: Entry) -> None:
    resource_template_validate(_instance(ResourceTemplate, tenant, entry))


def _prompt(tenant: Tenant, entry: Entry) -> None:
    prompt_validate(_instance(Prompt, tenant, entry))


def _upstream(tenant: Tenant, entry: Entry) -> None:
    upstream: Upstream = _instance(Upstream, tenant, entry)
    errors: dict[str, list[str]] = {}
    try:
        upstream_validate(upstream)
    except ValidationError as exc:
        errors.update(_messages(exc))
    found = overrides_errors(upstream=upstream, excluded=upstream.excluded, overrides=upstream.overrides)
    for key, messages in found.items():
        field = key if key in ("excluded", "overrides") else "overrides"
        errors.setdefault(field, []).extend(messages if field == key else [f"{key}: {m}" for m in messages])
    if errors:
        raise ValidationError(errors)


def _rate_limit(tenant: Tenant, entry: Entry) -> None:
    # The server a limit names is looked for by ``reference_problems`` (it may be one the file adds): it is checked
    # here as "named or not".
    fields = {**entry.fields, "period": PERIOD_SECONDS[entry.fields["period"]]}
    slug = fields.pop("server")
    limit = RateLimit(tenant=tenant, **fields)
    errors: dict[str, list[str]] = {}
    for check in (
        lambda: rate_limit_validate(limit=limit, ceiling=RateCeiling.objects.filter(tenant=tenant).first()),
        lambda: limit.full_clean(exclude=["tenant", "server"], validate_unique=False),
    ):
        try:
            check()
        except ValidationError as exc:
            for field, messages in _messages(exc).items():
                errors.setdefault(field, []).extend(m for m in messages if m not in errors.get(field, []))
    errors.pop("server", None)
    if slug and entry.fields["scope"] != RateLimit.Scope.SERVER:
        errors["server"] = ["Only a server limit names a server."]
    elif not slug and entry.fields["scope"] == RateLimit.Scope.SERVER:
        errors["server"] = ["Name the server (its slug) whose requests this limit counts."]
    if errors:
        raise ValidationError(errors)


def _server(tenant: Tenant, entry: Entry) -> None:
    # Its sources are looked for by name (``reference_problems``): the rest of its selection is checked here.
    server_validate(_instance(Server, tenant, entry, selection=selection_entries_of(entry.fields["selection"])))


VALIDATORS: dict[str, Callable[[Tenant, Entry], None]] = {
    TOOLS.name: _tool,
    RESOURCES.name: _resource,
    RESOURCE_TEMPLATES.name: _template,
    PROMPTS.name: _prompt,
    UPSTREAMS.name: _upstream,
    SERVERS.name: _server,
    RATE_LIMITS.name: _rate_limit,
}


def written_problems(
    *, tenant: Tenant, loaded: LoadedFile, written: dict[str, list[Entry]], settings: JSONObject
) -> list[Problem]:
    """What the validation of each object the apply would write says (by the field and line it is about)."""
    problems: list[Problem] = []
    for section in SECTIONS:
        validate = VALIDATORS.get(section.name)
        for entry in written.get(section.name, []):
            if validate is None:
                continue
            try:
                validate(tenant, entry)
            except ValidationError as exc:
                problems.extend(_problems_of(exc, loaded, section, entry))
    if settings:
        changed = Tenant.objects.get(pk=tenant.pk)
        for name, value in settings.items():
            setattr(changed, name, value)
        try:
            tenant_validate(changed)
        except ValidationError as exc:
            for field, messages in _messages(exc).items():
                path = ("settings", field) if field in settings else ("settings",)
                problems.extend(loaded.problem(path, message) for message in messages)
    return problems


def document_problems(*, loaded: LoadedFile, imported: list[Entry], files_allowed: bool) -> list[Problem]:
    """The OpenAPI sources the apply imports must be readable again: an http(s) URL, or (for the command, on the
    platform's machine) a file that is there."""
    problems = []
    for entry in imported:
        location = str(entry.fields["location"])
        if is_web_url(location):
            continue
        path = (OPENAPI_SOURCES.name, entry.index or 0, "location")
        if not files_allowed:
            problems.append(
                loaded.problem(path, f"{location!r} is not an http(s) URL: the document cannot be read again here")
            )
        elif not Path(location).is_file():
            problems.append(loaded.problem(path, f"there is no file {location!r} on this machine"))
    return problems


def name_problems(
    *, tenant: Tenant, loaded: LoadedFile, desired: State, managed: dict[str, set[str]]
) -> tuple[list[Problem], set[tuple[str, str]]]:
    """Names the file gives its items that an upstream's or an OpenAPI source's item holds and keeps after the apply
    (a source the file removes, or an imported tool its source no longer imports, frees its name), or that the file
    gives twice (a tool of its own and a tool one of its OpenAPI sources imports). Also the (section, key) of the
    entries refused, whose own validation would only repeat it."""
    problems = []
    refused: set[tuple[str, str]] = set()
    for section in SECTIONS:
        entries = desired.entries(section)
        if not entries:
            continue
        for key, holder in section.held(tenant).items():
            entry = entries.get(key)
            if entry is None or _freed(holder, key, desired, managed):
                continue
            path = (section.name, entry.index or 0, section.fields[0])
            problems.append(loaded.problem(path, f"{key!r} is held by {holder.what}: rename one of them"))
            refused.add((section.name, key))
    imported = {
        name: entry for entry in desired.entries(OPENAPI_SOURCES).values() for name in entry.fields.get("tools", [])
    }
    for key, entry in desired.entries(TOOLS).items():
        source = imported.get(key)
        if source is not None:
            path = (TOOLS.name, entry.index or 0, "name")
            line = loaded.line((OPENAPI_SOURCES.name, source.index or 0))
            where = f"the OpenAPI source {source.fields['location']!r} (line {line})"
            problems.append(loaded.problem(path, f"the tool {key!r} is also imported by {where}"))
    return problems, refused


def _freed(holder: Holder, key: str, desired: State, managed: dict[str, set[str]]) -> bool:
    """Whether the apply takes ``key`` from ``holder`` before it writes the file's own items."""
    kept = desired.sections[holder.section].get(holder.source)
    if kept is None:
        return holder.source in managed.get(holder.section, set())
    return holder.section == OPENAPI_SOURCES.name and key not in kept.fields.get("tools", [])


def _holder(tool: Tool) -> str:
    holder = holder_of(tool, "tool")
    return holder.what if holder is not None else "a tool made by hand (rename it, or list it in the file to manage it)"


def imported_name_problems(
    *, tenant: Tenant, loaded: LoadedFile, desired: State, managed: dict[str, set[str]]
) -> list[Problem]:
    """Tools the file's OpenAPI sources import whose names another of the tenant's tools holds and keeps after the
    apply (the file removes the objects it manages and no longer lists first)."""
    wanted_sources = desired.entries(OPENAPI_SOURCES)
    leaving_sources = managed.get(OPENAPI_SOURCES.name, set()) - set(wanted_sources)
    leaving_tools = managed.get(TOOLS.name, set()) - set(desired.entries(TOOLS))
    problems = []
    for location, entry in wanted_sources.items():
        names = entry.fields.get("tools", [])
        rows = Tool.objects.filter(tenant=tenant, name__in=names).select_related("upstream", "openapi_source")
        for tool in rows.order_by("name"):
            source = tool.openapi_source  # type: ignore[attr-defined]
            if source is not None and source.location in (location, *leaving_sources):
                continue  # its own tool, or one of a source the file removes
            if tool.upstream_id is None and source is None and tool.name in leaving_tools | set(desired.entries(TOOLS)):
                continue  # removed by the apply, or named twice in the file (said above)
            path = (OPENAPI_SOURCES.name, entry.index or 0, "tools")
            problems.append(loaded.problem(path, f"the tool {tool.name!r} it imports is held by {_holder(tool)}"))
    return problems


def _secrets_named(section: Section, fields: JSONObject) -> tuple[str, list[str]]:
    """The field that names secrets in an entry of ``section``, and the names."""
    if section is UPSTREAMS:
        return "auth", auth_secret_names(fields.get("auth"))
    if section is OPENAPI_SOURCES:
        return "secret_name", [fields["secret_name"]] if fields.get("secret_name") else []
    if "config" in section.fields:
        return "config", secret_names_in(str(fields.get("backend", "")), fields.get("config"))
    return "", []


def secret_problems(*, tenant: Tenant, loaded: LoadedFile, desired: State) -> list[Problem]:
    """Every secret the file names that the tenant does not have (values are never in a file: add them first)."""
    named: list[tuple[str, tuple[str | int, ...]]] = []
    for section in SECTIONS:
        for entry in desired.entries(section).values():
            field, names = _secrets_named(section, entry.fields)
            named.extend((name, (section.name, entry.index or 0, field)) for name in names)
    missing = set(secrets_missing(tenant=tenant, names=[name for name, _ in named]))
    return [
        loaded.problem(
            path,
            f"there is no secret {name!r} in {tenant.slug}: add it under Secrets first (a file names secrets, it "
            "never holds their values)",
        )
        for name, path in named
        if name in missing
    ]


# ---- what servers and rate limits name --------------------------------------------------------------------------

# An upstream's fields whose change may change which items it brings (the mirror applies them in the apply; a new
# address, prefix or credentials are read at the refresh after it).
UPSTREAM_ITEM_FIELDS = frozenset({"url", "prefix", "auth", "enabled", "excluded", "overrides"})
UPSTREAM_REFRESHED_FIELDS = frozenset({"url", "prefix", "auth", "enabled"})
# A selection's item lists, with the section of the tenant's own items of each kind and how messages name one.
ITEM_SECTIONS = {"tools": TOOLS, "resources": RESOURCES, "resource_templates": RESOURCE_TEMPLATES, "prompts": PROMPTS}


@dataclass(frozen=True)
class Unchecked:
    """An item a server names that the plan could not find, because an upstream the file adds or changes may bring
    it: the apply looks for it once its sources are written (``items_unknown``)."""

    path: tuple[str | int, ...]
    kind: str
    key: str


def _after(section: Section, desired: State, current: State, managed: dict[str, set[str]]) -> dict[str, JSONObject]:
    """The fields of ``section``'s objects once the file is applied, by key: the file's, and the tenant's others but
    those the file made and no longer lists."""
    mine = managed.get(section.name, set())
    kept = {key: entry.fields for key, entry in current.entries(section).items() if key not in mine}
    return {**kept, **{key: entry.fields for key, entry in desired.entries(section).items()}}


def _items_after(
    tenant: Tenant, desired: State, current: State, managed: dict[str, set[str]], upstreams: set[str]
) -> dict[str, set[str]]:
    """The keys a selection may name, per file list, once the file is applied: the tenant's own items, the tools of
    its OpenAPI sources (as the file lists them), and what the ``upstreams`` that stay mirror now."""
    known: dict[str, set[str]] = {}
    for name, (_, model, key) in ITEM_LISTS.items():
        own = {str(fields[key]) for fields in _after(ITEM_SECTIONS[name], desired, current, managed).values()}
        mirrored = model._default_manager.filter(tenant=tenant, upstream__name__in=sorted(upstreams))
        known[name] = own | set(mirrored.values_list(key, flat=True))
    for fields in _after(OPENAPI_SOURCES, desired, current, managed).values():
        known["tools"].update(fields.get("tools", []))
    return known


def items_uncertain(
    desired: State, current: State, *, fields: frozenset[str] = UPSTREAM_ITEM_FIELDS, added: bool = True
) -> bool:
    """Whether an upstream the file adds enabled (``added``), or changes in ``fields``, may bring items the tenant has
    not mirrored yet."""
    present = current.entries(UPSTREAMS)
    for key, entry in desired.entries(UPSTREAMS).items():
        before = present.get(key)
        if before is None:
            if added and entry.fields.get("enabled", True):
                return True
        elif any(before.fields.get(f) != entry.fields.get(f) for f in fields):
            return True
    return False


def reference_problems(
    *, tenant: Tenant, loaded: LoadedFile, desired: State, current: State, managed: dict[str, set[str]]
) -> tuple[list[Problem], list[Unchecked]]:
    """Sources and items a server's selection names that the tenant will not have once the file is applied, and
    servers a rate limit names that it will not have; also the items left for the apply to look for (an upstream the
    file adds or changes may bring them)."""
    problems: list[Problem] = []
    unchecked: list[Unchecked] = []
    upstreams = set(_after(UPSTREAMS, desired, current, managed))
    sources = [
        (location, str(fields["name"]))
        for location, fields in _after(OPENAPI_SOURCES, desired, current, managed).items()
    ]
    kept_upstreams = upstreams & set(current.entries(UPSTREAMS))
    known = _items_after(tenant, desired, current, managed, kept_upstreams)
    uncertain = items_uncertain(desired, current)
    for entry in desired.entries(SERVERS).values():
        at = (SERVERS.name, entry.index or 0, "selection")
        given = _given(loaded, at)
        for name in ITEM_LISTS:
            for value in entry.fields["selection"].get(name, []):
                if value in known[name]:
                    continue
                path = (*at, name, given.get(name, {}).get(value, 0))
                if uncertain:
                    unchecked.append(Unchecked(path, name, value))
                else:
                    problems.append(loaded.problem(path, _no_item(name, value)))
        for value in entry.fields["selection"].get("upstreams", []):
            if value not in upstreams:
                path = (*at, "upstreams", given.get("upstreams", {}).get(value, 0))
                problems.append(loaded.problem(path, f"there is no upstream {value!r} in the file or the tenant"))
        for value in entry.fields["selection"].get("openapi_sources", []):
            if openapi_source_named(sources, value) is None:
                path = (*at, "openapi_sources", given.get("openapi_sources", {}).get(value, 0))
                shared = sum(1 for _, name in sources if name == value) > 1
                message = (
                    f"several OpenAPI sources are named {value!r}: name this one by its location"
                    if shared
                    else f"there is no OpenAPI source {value!r} (by name or location) in the file or the tenant"
                )
                problems.append(loaded.problem(path, message))
    servers = set(_after(SERVERS, desired, current, managed))
    for entry in desired.entries(RATE_LIMITS).values():
        slug = entry.fields.get("server")
        if slug and slug not in servers:
            where = (RATE_LIMITS.name, entry.index or 0, "server")
            problems.append(loaded.problem(where, f"there is no server {slug!r} in the file or the tenant"))
    return problems, unchecked


def _given(loaded: LoadedFile, at: tuple[str | int, ...]) -> dict[str, dict[str, int]]:
    """The place of each value in the lists of the server's selection at ``at`` (the file was checked against the
    schema: the path is there), by list and value: how a problem finds its line."""
    selection = loaded.data[at[0]][at[1]].get(at[2]) or {}
    return {
        name: {value: index for index, value in reversed(list(enumerate(values)))} for name, values in selection.items()
    }


def _no_item(name: str, key: str) -> str:
    noun = ITEM_SECTIONS[name].noun
    return f"there is no {noun} {key!r} in the file or the tenant (nor from its sources)"


def items_unknown(*, tenant: Tenant, loaded: LoadedFile, unchecked: list[Unchecked]) -> list[Problem]:
    """Of the items a plan could not find, those the tenant does not have now (in the apply, once its sources and
    items are written)."""
    problems = []
    for item in unchecked:
        _, model, key = ITEM_LISTS[item.kind]
        if not model._default_manager.filter(tenant=tenant, **{key: item.key}).exists():
            problems.append(loaded.problem(item.path, _no_item(item.kind, item.key)))
    return problems
