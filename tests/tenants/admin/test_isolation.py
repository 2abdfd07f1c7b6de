"""Every admin URL of every registered model, tried by a tenant's admin and owner against another tenant's rows:
lists and searches leave them out, object pages are 404s, forms refuse them, actions leave them unchanged.

The models come from ``admin.site._registry`` and their rows from ``tests/admin_objects.py``, so a model registered
later is covered (or fails by name for want of a fixture) without a list kept here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.test import Client
from django.urls import reverse

from tenants.admin.scoping import TenantScopedAdmin, TenantScopedInline
from tenants.history.versioned import versioned_entry, versioned_models
from tenants.models import Membership, Tenant
from tests.admin_objects import admin_object
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

MARK = "globex"  # the slug of ``theirs`` (conftest), in every name of their rows: a page that shows it leaks them
STANDARD_VIEWS = ("changelist", "add", "history", "delete", "change")
PLATFORM_PACKAGES = ("tenants", "mcp_platform")
REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)
REFUSED = (403, 404)

# URLs an admin class adds beyond the standard ones and that take no object id: how to try each one against the
# other tenant. A URL added later with no entry here fails the test by name.
ExtraProbe = Callable[[Client, str, Tenant], None]
EXTRA_URL_PROBES: dict[str, ExtraProbe] = {}


def probes(name: str) -> Callable[[ExtraProbe], ExtraProbe]:
    def register(probe: ExtraProbe) -> ExtraProbe:
        EXTRA_URL_PROBES[name] = probe
        return probe

    return register


@probes("tenants_openapisource_import")
def _openapi_import(client: Client, url: str, theirs: Tenant) -> None:
    from tenants.models import OpenApiSource  # type: ignore[attr-defined]

    before = OpenApiSource.objects.count()
    shown = client.get(url, {"tenant": theirs.pk})
    posted = client.post(url, {"tenant": theirs.pk, "url": "https://example.com/openapi.json"})
    assert shown.status_code in (200, *REFUSED) and MARK not in page(shown)
    assert posted.status_code in (200, *REFUSED) and MARK not in page(posted)
    if posted.status_code == 200:
        assert "tenant" in posted.context["form"].errors
    assert OpenApiSource.objects.count() == before


@probes("activity_activityrecord_export_csv")
@probes("activity_activityrecord_export_jsonl")
def _activity_export(client: Client, url: str, theirs: Tenant) -> None:
    for query in ({}, {"tenant__id__exact": theirs.pk}, {"q": MARK}):
        exported = client.get(url, query)
        assert exported.status_code in (200, *REFUSED), query
        body = b"".join(exported.streaming_content).decode() if exported.status_code == 200 else ""
        assert MARK not in body.lower(), query


@probes("activity_activityrecord_usage")
def _activity_usage(client: Client, url: str, theirs: Tenant) -> None:
    assert client.get(url, {"tenant": theirs.pk}).status_code == 404
    shown = client.get(url)
    assert shown.status_code == 200 and MARK not in page(shown)


@probes("tenants_tool_schema_check")
def _tool_schema_check(client: Client, url: str, theirs: Tenant) -> None:
    # Checks a draft against the rules alone: no tenant's rows are read, so none can show.
    draft = {"field": "input_schema", "text": json.dumps({"type": "object", "title": str(theirs.pk)})}
    answer = client.post(url, json.dumps(draft), content_type="application/json")
    assert answer.status_code == 200 and answer.json() == {"errors": []}
    assert MARK not in page(answer)


@probes("jobs_toolrun_live")
def _tool_run_live(client: Client, url: str, theirs: Tenant) -> None:
    from mcp_platform.jobs.models import ToolRun

    ids = list(ToolRun.objects.filter(tenant=theirs).values_list("pk", flat=True))
    answer = client.get(url, {"id": ids})
    assert ids and answer.status_code == 200 and answer.json() == {"runs": {}}


def _deleted_rows(model: type[models.Model], tenant_field: str) -> ExtraProbe:
    """The model's "Recover deleted" list, with a version of their row whose row is gone: not listed."""

    def probe(client: Client, url: str, theirs: Tenant) -> None:
        from reversion.models import Version

        from tenants.history.revisions import catalog_revision, history_record

        row = model._default_manager.filter(**{tenant_field: theirs}).first()  # the world's row of theirs
        assert row is not None
        with catalog_revision():
            history_record(row)
        Version.objects.get_for_object(row).update(object_id="987654321")  # their row, as if deleted
        shown = client.get(url)
        assert shown.status_code == 200 and shown.context["rows"] == [] and MARK not in page(shown)

    return probe


for _model in versioned_models():
    if (_entry := versioned_entry(_model)) is not None and _entry.recovers:
        _name = f"{_model._meta.app_label}_{_model._meta.model_name}_deleted"
        EXTRA_URL_PROBES[_name] = _deleted_rows(_model, _entry.tenant_field)


def page(response: Any) -> str:
    return response.content.decode(errors="replace").lower()


def label(model: type[models.Model]) -> str:
    return model._meta.label


def rows(obj: models.Model) -> list[dict[str, Any]]:
    return list(type(obj)._default_manager.filter(pk=obj.pk).values())


def url(model: type[models.Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def is_scoped(model_admin: admin.ModelAdmin) -> bool:
    """Whether tenant admins see the model at all (the rest is platform staff's: refused outright)."""
    return (
        isinstance(model_admin, TenantScopedAdmin)
        and model_admin.tenant_path is not None
        and bool(model_admin.view_roles)
    )


@pytest.fixture
def world(ours: Tenant, theirs: Tenant) -> dict[str, dict[type[models.Model], models.Model]]:
    """A row of every registered model for both tenants (so any page that lists the other's shows the mark)."""
    assert theirs.slug == MARK, "their rows are named after their slug: the mark"
    made: dict[str, dict[type[models.Model], models.Model]] = {"ours": {}, "theirs": {}}
    missing = []
    for model, _ in REGISTERED:
        try:
            made["ours"][model] = admin_object(model, ours)
            made["theirs"][model] = admin_object(model, theirs)
        except LookupError as exc:
            missing.append(str(exc))
    if missing:
        pytest.fail("\n".join(missing))
    return made


@pytest.fixture(params=[Membership.Role.ADMIN, Membership.Role.OWNER])
def tenant_admin(request: pytest.FixtureRequest, ours: Tenant, client: Client) -> Client:
    """Signed in as an admin or an owner of ``ours``, made only through a membership (no staff flag)."""
    user = UserFactory(username=f"acme-{request.param}")
    MembershipFactory(tenant=ours, user=user, role=request.param)
    client.force_login(user)
    return client


def test_every_admin_of_the_platform_declares_how_its_model_reaches_a_tenant() -> None:
    forgotten = []
    for model, model_admin in REGISTERED:
        wrapped = getattr(type(model_admin), "wrapped_admin_class", None)
        if wrapped is not None and wrapped.__module__.startswith(PLATFORM_PACKAGES):
            forgotten.append(f"{label(model)}: {wrapped.__qualname__} is not on TenantScopedAdmin")
        for inline in model_admin.inlines:
            if not issubclass(inline, TenantScopedInline):
                forgotten.append(f"{label(model)}: inline {inline.__qualname__} is not on TenantScopedInline")
    assert forgotten == []


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=[label(m) for m, _ in REGISTERED])
def test_another_tenants_rows_are_out_of_reach(
    tenant_admin: Client,
    world: dict[str, dict[type[models.Model], models.Model]],
    theirs: Tenant,
    model: Any,
    model_admin: admin.ModelAdmin,
) -> None:
    client = tenant_admin
    mine, other = world["ours"][model], world["theirs"][model]
    before = rows(other)
    scoped = is_scoped(model_admin)

    # Lists, searches and raw-id popups: ours listed, theirs nowhere on the page (filters included).
    for query in ({}, {"q": MARK}, {"_popup": "1", "_to_field": "id"}):
        listed = client.get(url(model, "changelist"), query)
        if not scoped:
            assert listed.status_code == 403, query
            continue
        assert listed.status_code == 200, query
        shown = {o.pk for o in listed.context["cl"].result_list}
        assert other.pk not in shown, query
        # A search page repeats the term in its links; the others show the mark nowhere (filters included).
        assert "q" in query or MARK not in page(listed), query
        if not query:
            assert mine.pk in shown

    # Object pages, read and posted: a 404 whether the row exists or not.
    for view in ("change", "delete", "history"):
        got = client.get(url(model, view, other.pk))
        posted = client.post(url(model, view, other.pk), {"post": "yes"})
        expected = (404,) if scoped else REFUSED
        assert got.status_code in expected and posted.status_code in expected, view

    # The site's "view on site" redirect, which takes any model's row.
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    assert client.get(reverse("admin:view_on_site", args=[content_type.pk, other.pk])).status_code == 404

    # Every other URL the admin class adds.
    standard = {f"{model._meta.app_label}_{model._meta.model_name}_{view}" for view in STANDARD_VIEWS}
    for pattern in model_admin.get_urls():
        if pattern.name is None or pattern.name in standard:
            continue
        if groups := len(pattern.pattern.regex.groupindex):
            # Their row first; any further part (a run of it, say) as a plain number: the row alone must refuse.
            target = reverse(f"admin:{pattern.name}", args=[other.pk, *[1] * (groups - 1)])
            assert client.get(target).status_code in REFUSED, pattern.name
            assert client.post(target, {}).status_code in REFUSED, pattern.name
        elif pattern.name in EXTRA_URL_PROBES:
            EXTRA_URL_PROBES[pattern.name](client, reverse(f"admin:{pattern.name}"), theirs)
        else:
            pytest.fail(f"{pattern.name} (added by {type(model_admin).__name__}) has no probe in EXTRA_URL_PROBES")

    # Bulk actions on their row: nothing changes.
    actions = ["delete_selected", *(a if isinstance(a, str) else a.__name__ for a in model_admin.actions or ())]
    for action in actions:
        done = client.post(
            url(model, "changelist"),
            {"action": action, "_selected_action": [str(other.pk)], "index": "0", "post": "yes"},
        )
        assert done.status_code in (200, 302, 403), action
        assert MARK not in page(done), action

    # Adding with every foreign key pointing at their rows: refused, nothing stored.
    count = model._default_manager.count()
    add = client.get(url(model, "add"))
    assert add.status_code in (200, 302, 403)
    if add.status_code == 200 and "adminform" in (add.context or {}):
        assert MARK not in page(add)
        form = add.context["adminform"].form
        keys = {
            name: admin_object(field.queryset.model, theirs).pk
            for name, field in form.fields.items()
            if hasattr(field, "queryset") and field.queryset is not None and not field.disabled
        }
        if keys:
            refused = client.post(url(model, "add"), keys)
            assert refused.status_code == 200
            errors = refused.context["adminform"].form.errors
            assert set(keys) <= set(errors), errors
            assert MARK not in page(refused)  # the re-rendered form does not show what their ids name
    assert model._default_manager.count() == count

    # Autocomplete through each of the model's foreign keys.
    for field in model._meta.get_fields():
        if not (field.is_relation and field.concrete and (field.many_to_one or field.many_to_many)):
            continue
        found = client.get(
            reverse("admin:autocomplete"),
            {"app_label": model._meta.app_label, "model_name": model._meta.model_name, "field_name": field.name},
        )
        assert found.status_code in (200, *REFUSED), field.name
        assert MARK not in page(found), field.name

    assert rows(other) == before
