"""Which Python functions a tenant may bind: staff grants, packages reserved for the built-in tenants, refusals
by the services and the admin, and the built-in loaders granting what their catalogs bind."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from tenants import services
from tenants.backends.python_grants import python_function_grant, python_function_revoke, python_functions_granted
from tenants.models import Backend, PythonFunctionGrant, Tenant, Tool
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_tool_may_not_bind_a_function_its_tenant_was_not_granted(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as caught:
        services.tool_create(tenant=tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})

    assert caught.value.message_dict["config"] == [
        "Tenant 'acme' may not bind the Python function 'demo.echo': platform staff grant functions per tenant "
        "(Python function grants in the admin)."
    ]
    assert not Tool.objects.exists()


def test_a_granted_function_may_be_bound(tenant: Tenant, other_tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.echo")

    services.tool_create(tenant=tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})

    with pytest.raises(ValidationError):
        services.tool_create(tenant=other_tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})


@pytest.mark.parametrize(("function", "owner"), [("conformance.greet", "conformance"), ("bench.progress", "bench")])
def test_reserved_packages_are_granted_only_to_their_built_in_tenant(tenant: Tenant, function: str, owner: str) -> None:
    with pytest.raises(ValidationError) as caught:
        python_function_grant(tenant=tenant, function=function)
    assert caught.value.message_dict["function"] == [
        f"{function!r} belongs to the built-in tenant {owner!r}; it cannot be granted to 'acme'."
    ]
    python_function_grant(tenant=TenantFactory(slug=owner), function=function)
    assert list(PythonFunctionGrant.objects.values_list("tenant__slug", "function")) == [(owner, function)]


def test_a_reserved_function_is_refused_even_with_a_grant_row_written_behind_the_services(tenant: Tenant) -> None:
    PythonFunctionGrant.objects.create(tenant=tenant, function="conformance.greet")

    with pytest.raises(ValidationError, match="belongs to the built-in tenant 'conformance'"):
        services.tool_create(
            tenant=tenant, name="greet", backend=Backend.PYTHON, config={"function": "conformance.greet"}
        )


def test_an_unregistered_function_cannot_be_granted(tenant: Tenant) -> None:
    with pytest.raises(ValidationError, match=r"No Python function named 'nobody\.wrote_this' is registered"):
        python_function_grant(tenant=tenant, function="nobody.wrote_this")


def test_a_grant_in_use_cannot_be_withdrawn(tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.echo")
    services.tool_create(tenant=tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})

    with pytest.raises(ValidationError, match=r"'demo\.echo' is still bound by tool echo"):
        python_function_revoke(tenant=tenant, function="demo.echo")

    services.tool_delete(tool=Tool.objects.get(name="echo"))
    python_function_revoke(tenant=tenant, function="demo.echo")
    assert python_functions_granted(tenant_id=tenant.pk) == []


def test_the_built_in_loaders_grant_what_their_catalogs_bind() -> None:
    call_command("load_conformance_tenant", verbosity=0)
    call_command("load_bench_tenants", "--catalog-tools", "0", verbosity=0)
    call_command("load_demo_tenant", verbosity=0)

    conformance = python_functions_granted(tenant_id=Tenant.objects.get(slug="conformance").pk)
    assert "conformance.greet" in conformance or "conformance.tool_with_progress" in conformance
    assert all(name.startswith("conformance.") for name in conformance)
    assert python_functions_granted(tenant_id=Tenant.objects.get(slug="bench").pk) == ["bench.progress", "demo.echo"]
    assert all(n.startswith("demo.") for n in python_functions_granted(tenant_id=Tenant.objects.get(slug="demo").pk))


def test_only_superusers_see_and_make_grants(client: Any, tenant: Tenant) -> None:
    owner = UserFactory(username="owner", is_staff=True)
    MembershipFactory(tenant=tenant, user=owner, role="owner")
    client.force_login(owner)
    assert client.get(reverse("admin:tenants_pythonfunctiongrant_changelist")).status_code == 403
    assert (
        client.post(
            reverse("admin:tenants_pythonfunctiongrant_add"), {"tenant": tenant.pk, "function": "demo.echo"}
        ).status_code
        == 403
    )

    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:tenants_pythonfunctiongrant_add"), {"tenant": tenant.pk, "functions": ["conformance.greet"]}
    )
    assert "conformance.greet is not one of the available choices" in response.content.decode()
    response = client.post(
        reverse("admin:tenants_pythonfunctiongrant_add"), {"tenant": tenant.pk, "functions": ["demo.echo"]}
    )
    assert response.status_code == 302
    assert python_functions_granted(tenant_id=tenant.pk) == ["demo.echo"]


def test_staff_grant_several_functions_to_a_tenant_in_one_form(admin_client: Any, tenant: Tenant) -> None:
    add = reverse("admin:tenants_pythonfunctiongrant_add")

    response = admin_client.post(
        add, {"tenant": tenant.pk, "functions": ["demo.echo", "demo.add", "demo.count_slowly"]}
    )

    assert response.status_code == 302
    assert response["Location"].endswith(f"?tenant__id__exact={tenant.pk}")
    assert python_functions_granted(tenant_id=tenant.pk) == ["demo.add", "demo.count_slowly", "demo.echo"]
    listing = admin_client.get(response["Location"]).content.decode()
    assert "Granted 3 functions to acme: demo.add, demo.count_slowly, demo.echo." in listing


def test_the_grant_form_offers_only_what_the_tenant_may_be_granted(admin_client: Any, tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.echo")
    conformance = TenantFactory(slug="conformance", name="Conformance")
    add = reverse("admin:tenants_pythonfunctiongrant_add")

    for_acme = admin_client.get(f"{add}?tenant={tenant.pk}").content.decode()
    for_conformance = admin_client.get(f"{add}?tenant={conformance.pk}").content.decode()
    without_tenant = admin_client.get(add).content.decode()

    assert 'type="checkbox" name="functions" value="demo.add"' in for_acme
    assert 'value="demo.echo"' not in for_acme and "Already granted: demo.echo." in for_acme
    assert 'value="conformance.' not in for_acme and 'value="bench.' not in for_acme
    assert 'value="conformance.greet"' in for_conformance and 'value="bench.' not in for_conformance
    assert 'value="demo.add"' in without_tenant and 'value="conformance.' not in without_tenant
    refused = admin_client.post(add, {"tenant": tenant.pk, "functions": []})
    assert "Tick at least one." in refused.content.decode()


def test_the_tool_form_offers_the_granted_functions_with_their_signatures(admin_client: Any, tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.add")
    tool = services.tool_create(tenant=tenant, name="add", backend=Backend.PYTHON, config={"function": "demo.add"})

    page = admin_client.get(reverse("admin:tenants_tool_change", args=[tool.pk])).content.decode()

    assert '<option value="demo.add" selected>demo.add</option>' in page
    assert "demo.add(a: float, b: float)" in page
    assert 'value="demo.echo"' not in page
