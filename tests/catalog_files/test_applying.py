"""Applying a file: idempotent, in one transaction through the services (list_changed after commit, the revision,
the admin's history and the activity log), refused as a whole (every row as it was) on bad input, on a refusal while
writing, on an upstream that cannot be reached and on a plan other than the one reviewed; sources changed by the
file are read again (an upstream's items, an OpenAPI source's selection)."""

from __future__ import annotations

from typing import Any

import pytest
from channels.layers import BaseChannelLayer
from django.contrib.admin.models import LogEntry
from reversion.models import Revision

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.catalog_files.applying import PlanChanged
from mcp_platform.catalog_files.loading import ConfigFileError
from mcp_platform.catalog_files.models import ManagedObject
from mcp_platform.catalog_files.planning import configuration_plan, file_check
from tenants.models import Tenant, Tool
from tenants.secrets import secret_set
from tests.catalog_files.conftest import DocumentServer, apply, database_snapshot
from tests.e2e.upstreams import UpstreamServer
from tests.tenants.conftest import CatalogListener

pytestmark = pytest.mark.django_db

OK = "    config: {content: [{type: text, text: ok}]}\n"
FILE = (
    "version: 1\n"
    "settings:\n"
    "  instructions: From the file.\n"
    "tools:\n"
    "  - name: search\n" + OK + "  - name: fetch\n" + OK + "resources:\n"
    "  - uri: docs://readme\n"
    "    name: readme\n"
    "    text: Hello.\n"
    "rate_limits:\n"
    "  - scope: tool\n"
    "    tool_name: search\n"
    "    rate: 10\n"
    "    period: second\n"
    "    burst: 10\n"
)


def bomb(levels: int = 5, width: int = 10) -> str:
    """A "billion laughs": each level ``width`` aliases of the one before."""
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"lol{n}: &lol{n} [" + ", ".join([f"*lol{n - 1}"] * width) + "]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def refused(tenant: Tenant, text: str | bytes) -> list[str]:
    with pytest.raises(ConfigFileError) as error:
        apply(tenant, text)
    return [str(problem) for problem in error.value.problems]


def test_applying_the_same_file_twice_changes_nothing_the_second_time(tenant: Tenant) -> None:
    first = apply(tenant, FILE)
    snapshot = database_snapshot()

    second = apply(tenant, FILE)

    assert first.proposal.plan.count("add") == 4 and second.proposal.plan.empty
    assert database_snapshot() == snapshot


def test_the_file_records_what_it_manages(tenant: Tenant) -> None:
    apply(tenant, FILE)

    managed = set(ManagedObject.objects.filter(tenant=tenant).values_list("section", "key"))
    assert managed == {
        ("tools", "search"),
        ("tools", "fetch"),
        ("resources", "docs://readme"),
        ("rate_limits", "tool:search"),
    }


def test_an_apply_is_announced_after_commit_and_recorded_as_an_admin_edit_is(
    tenant: Tenant, channel_layer: BaseChannelLayer, django_capture_on_commit_callbacks: Any
) -> None:
    listener = CatalogListener(channel_layer, tenant.pk)
    revision = tenant.revision

    with django_capture_on_commit_callbacks(execute=True):
        apply(tenant, FILE, source="acme.yaml")

    heard = set()
    while True:
        try:
            heard.add(tuple(sorted(listener.receive(timeout=0.1).items())))
        except TimeoutError:
            break
    tenant.refresh_from_db()
    assert tenant.revision > revision and tenant.instructions == "From the file."
    history = LogEntry.objects.filter(change_message__contains="configuration file of acme.yaml")
    limit = "Tool (each tool's calls): search, 10 per second"
    assert sorted(entry.object_repr for entry in history) == sorted(["acme", "search", "fetch", "docs://readme", limit])
    record = ActivityRecord.objects.get(tenant=tenant, method="admin/configuration file")
    assert record.details["added"] == ["fetch", "search", "docs://readme", limit]
    assert heard == {
        (("type", "tenant.changed"),),
        (("kind", "tools"), ("type", "catalog.changed")),
        (("kind", "resources"), ("type", "catalog.changed")),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FILE + "server: []\n", "line 19 (server): unknown key 'server'"),
        (FILE.replace("burst: 10", "burst: ten"), "line 18 (rate_limits[0].burst): must be a whole number, not text"),
        (FILE + "version: 1\n", "line 19 (version): the key 'version' is repeated (first on line 1)"),
        (
            FILE.replace("    text: Hello.\n", "    text: &t [*t]\n"),
            "line 12 (resources[0].text[0]): an alias refers to the block it is in",
        ),
        (FILE + bomb(), "line 23 (lol4[2]): the file uses more than 32 aliases (*name); write the values out"),
        (
            FILE.replace(
                "  - name: fetch\n" + OK,
                "  - name: fetch\n    backend: http\n"
                "    config: {method: GET, url: 'https://api.example/', auth: {type: bearer, secret: nowhere}}\n",
            ),
            "line 9 (tools[1].config): there is no secret 'nowhere' in acme",
        ),
        (FILE.encode() + b"#" * (5 * 1024 * 1024), "the limit is 2,097,152"),
    ],
    ids=["unknown key", "wrong type", "duplicate key", "alias loop", "alias bomb", "missing secret", "5 MiB"],
)
def test_bad_input_is_refused_with_its_line_and_changes_nothing(
    tenant: Tenant, text: str | bytes, expected: str
) -> None:
    apply(tenant, FILE.replace("From the file.", "Before."))
    snapshot = database_snapshot()

    problems = refused(tenant, text)

    assert any(expected in problem for problem in problems), problems
    assert database_snapshot() == snapshot


def test_a_refusal_while_writing_rolls_the_whole_apply_back(tenant: Tenant, upstream: UpstreamServer) -> None:
    with_upstream = f"version: 1\nupstreams:\n  - name: notes\n    url: {upstream.url}\n    prefix: notes_\n"
    apply(tenant, with_upstream)
    snapshot = database_snapshot()
    # Valid on its own, and each check passes against the tenant as it is; but the upstream's new name for its echo
    # tool, written first, takes the name the file's own tool then asks for.
    clashing = (
        "version: 1\n"
        "settings:\n"
        "  instructions: Changed, then rolled back.\n"
        "tools:\n"
        "  - name: find\n" + OK + with_upstream.removeprefix("version: 1\n") + "    overrides:\n"
        "      'tools:echo': {name: find}\n"
    )

    problems = refused(tenant, clashing)

    assert problems == [
        "line 5 (tools[0]): the tool 'find' could not be written: Tool with this Tenant and Name already exists."
    ]
    assert database_snapshot() == snapshot
    assert Tool.objects.filter(tenant=tenant, name="notes_echo").exists()


def test_an_upstream_that_cannot_be_reached_is_refused_before_anything_changes(
    tenant: Tenant, loopback_allowed: None
) -> None:
    snapshot = database_snapshot()
    text = FILE + "upstreams:\n  - name: gone\n    url: http://127.0.0.1:9/mcp\n    prefix: gone_\n"

    problems = refused(tenant, text)

    assert len(problems) == 1 and problems[0].startswith("line 20 (upstreams[0]): could not add the upstream: ")
    assert database_snapshot() == snapshot


def test_an_apply_refuses_a_plan_other_than_the_one_reviewed(tenant: Tenant) -> None:
    reviewed = configuration_plan(tenant=tenant, loaded=file_check(FILE)).plan.digest()
    Tool.objects.create(tenant=tenant, name="search", config={"content": []})  # someone else, meanwhile
    snapshot = database_snapshot()

    with pytest.raises(PlanChanged) as changed:
        apply(tenant, FILE, reviewed=reviewed)

    assert {c.key: c.action for c in changed.value.proposal.plan.changes}["search"] == "adopt"
    assert database_snapshot() == snapshot
    assert apply(tenant, FILE, reviewed=changed.value.proposal.plan.digest()).proposal.plan.count("adopt") == 1


def test_an_upstreams_items_are_mirrored_again_when_the_file_changes_them(
    tenant: Tenant, upstream: UpstreamServer
) -> None:
    text = f"version: 1\nupstreams:\n  - name: notes\n    url: {upstream.url}\n    prefix: notes_\n"
    apply(tenant, text)
    assert Tool.objects.filter(tenant=tenant, name="notes_weather").exists()

    report = apply(tenant, text + "    excluded: ['tools:weather']\n")

    assert [c.fields[0].field for c in report.proposal.plan.changes] == ["excluded"]
    assert not Tool.objects.filter(tenant=tenant, name="notes_weather").exists()
    assert report.notes == []


def test_an_openapi_source_is_imported_again_with_the_files_selection(
    tenant: Tenant, openapi_document: DocumentServer
) -> None:
    secret_set(tenant=tenant, name="pets-key", value="k")
    text = (
        "version: 1\nopenapi_sources:\n"
        f"  - location: {openapi_document.url}\n"
        "    name: Pets\n    prefix: pets_\n    secret_name: pets-key\n    tools: [pets_listPets]\n"
    )
    apply(tenant, text)
    requests = openapi_document.requests

    apply(tenant, text)  # unchanged: not read again
    assert openapi_document.requests == requests
    apply(tenant, text.replace("[pets_listPets]", "[pets_createPet, pets_listPets]"))

    assert openapi_document.requests == requests + 1
    names = set(Tool.objects.filter(tenant=tenant, openapi_source__isnull=False).values_list("name", flat=True))
    assert names == {"pets_createPet", "pets_listPets"}


def test_an_openapi_tool_the_document_does_not_offer_is_refused(
    tenant: Tenant, openapi_document: DocumentServer
) -> None:
    text = (
        "version: 1\nopenapi_sources:\n"
        f"  - location: {openapi_document.url}\n"
        "    name: Pets\n    prefix: pets_\n    tools: [pets_listPets, pets_feedPets]\n"
    )

    problems = refused(tenant, text)

    assert problems[0].startswith(
        "line 3 (openapi_sources[0]): could not import the document: no operation of the document becomes the tool "
        "'pets_feedPets' (with the prefix 'pets_'); it offers "
    )
    assert not tenant.openapi_sources.exists()


def test_an_apply_is_one_revision_of_the_catalogs_history(tenant: Tenant) -> None:
    before = Revision.objects.count()
    apply(tenant, FILE, source="tenant.yaml")

    assert Revision.objects.count() == before + 1
    revision = Revision.objects.latest("pk")
    versioned = {version.content_type.model for version in revision.version_set.all()}
    assert {"tool", "resource", "ratelimit"} <= versioned
    assert "tenant.yaml" in revision.get_comment()
