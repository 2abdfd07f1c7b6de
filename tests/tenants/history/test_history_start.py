"""``manage.py catalog_history_start`` gives a first version to every kept row that has none (rows made before the
history existed), one revision per tenant, and nothing the second time; mirrored rows stay out."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from reversion.models import Revision, Version

from tenants import services
from tenants.federation.mirror import mirror_apply
from tenants.history.restore import version_restore
from tenants.models import Tenant, Tool, Upstream
from tests.factories import ToolFactory
from tests.tenants.federation.test_mirror import listing

pytestmark = pytest.mark.django_db


def test_rows_made_before_the_history_get_a_first_version_to_go_back_to(tenant: Tenant, other_tenant: Tenant) -> None:
    old = ToolFactory(tenant=tenant, name="old", description="As it was.")  # a raw write: no version
    ToolFactory(tenant=other_tenant, name="theirs")
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", prefix="up_")
    mirror_apply(upstream=upstream, listing=listing())

    call_command("catalog_history_start", verbosity=0)
    call_command("catalog_history_start", verbosity=0)

    assert Revision.objects.count() == 2, "one per tenant, and none the second time"
    assert sorted(v.object_repr for v in Version.objects.all()) == sorted(
        ["old", "theirs", "up", tenant.slug, other_tenant.slug]
    )
    services.tool_update(tool=old, data={"description": "Edited."})
    version_restore(version=Version.objects.get_for_object(old).order_by("pk").first())  # type: ignore[arg-type]
    assert Tool.objects.get(pk=old.pk).description == "As it was."
