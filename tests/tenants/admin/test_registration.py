"""The admin package registers each model once, on the platform's one site, and serves the pages other apps add.

Django sets ``admin.site`` up from ``PlatformAdminConfig.default_site``; importing that module runs the package,
whose classes register on ``admin.site`` while it is being set up. Both set-ups must give the same site, or the
first one's registrations are lost: these tests would see a model missing or a second site.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.sites import all_sites
from django.test import Client
from django.urls import path, reverse
from django.utils.module_loading import import_string

from tenants.admin.catalog import ToolAdmin
from tenants.admin.pages import ObjectPage, ObjectPages, tool_pages
from tenants.admin.site import TenantAdminSite, platform_site
from tenants.models import Tool
from tests.factories import MembershipFactory, ToolFactory

TENANT_ADMINS = {
    "Tenant": "tenants.admin.members.TenantAdmin",
    "Membership": "tenants.admin.members.MembershipAdmin",
    "Tool": "tenants.admin.catalog.ToolAdmin",
    "Resource": "tenants.admin.catalog.ResourceAdmin",
    "ResourceTemplate": "tenants.admin.catalog.ResourceTemplateAdmin",
    "Prompt": "tenants.admin.catalog.PromptAdmin",
    "Secret": "tenants.admin.secrets.SecretAdmin",
    "PythonFunctionGrant": "tenants.admin.python_functions.PythonFunctionGrantAdmin",
    "Invitation": "tenants.admin.invitations.InvitationAdmin",
    "OpenApiSource": "tenants.admin.openapi.OpenApiSourceAdmin",
    "Upstream": "tenants.admin.upstreams.UpstreamAdmin",
    "PersonalCredential": "tenants.admin.connections.PersonalCredentialAdmin",
    "Server": "tenants.admin.servers.ServerAdmin",
}
# Models of the tenants app with no admin page at all, and why: nobody administers them by hand.
NOT_IN_ADMIN = {
    "ConnectLink": "a single-use link that lives ten minutes, made by a call's question",
    "OAuthClientRegistration": "how the platform is known to an authorization server, made when a person connects",
    "PendingChange": "a source's held change, decided on the source's Review changes page",
}


def test_admin_site_is_the_platform_site_and_the_only_tenant_site() -> None:
    assert admin.site._wrapped is platform_site()
    assert isinstance(platform_site(), TenantAdminSite)
    # The default-site path Django imports gives the same object every time it is called.
    assert import_string(apps.get_app_config("admin").default_site)() is platform_site()
    assert [site for site in all_sites if isinstance(site, TenantAdminSite)] == [platform_site()]


def test_each_tenants_model_is_registered_once_with_its_class_from_the_package() -> None:
    registered = {model.__name__: model_admin for model, model_admin in admin.site._registry.items()}
    for model, dotted in TENANT_ADMINS.items():
        assert type(registered[model]) is import_string(dotted), model
    tenant_models = {model.__name__ for model in admin.site._registry if model._meta.app_label == "tenants"}
    assert tenant_models == set(TENANT_ADMINS)


def test_every_model_of_the_tenants_app_is_in_the_admin_or_said_to_have_no_page() -> None:
    # A new model is registered (and so reached by the isolation test) or named here with its reason.
    models = {model.__name__ for model in apps.get_app_config("tenants").get_models()}
    assert models == set(TENANT_ADMINS) | set(NOT_IN_ADMIN)
    assert not set(TENANT_ADMINS) & set(NOT_IN_ADMIN)


def test_pages_added_again_replace_the_first_in_place() -> None:
    pages = ObjectPages()
    first = ObjectPage(label="One", url_name="tenants_tool_one", urls=lambda model_admin: [])
    pages.add(first)
    pages.add(ObjectPage(label="Two", url_name="tenants_tool_two", urls=lambda model_admin: []))
    pages.add(ObjectPage(label="Uno", url_name="tenants_tool_one", urls=lambda model_admin: []))

    assert [page.label for page in pages._pages.values()] == ["Uno", "Two"]


def test_the_tool_admin_serves_the_pages_added_to_it_before_its_own() -> None:
    model_admin = admin.site._registry[Tool]
    seen = []
    extra = ObjectPage(
        label="Extra", url_name="tenants_tool_extra", urls=lambda m: seen.append(m) or [path("x/", lambda r: None)]
    )
    pages = ObjectPages()
    pages.add(extra)
    served = ToolAdmin(Tool, admin.site)
    served.pages = pages

    urls = served.get_urls()

    assert str(urls[0].pattern) == "x/" and seen == [served]
    # The console's pages are added at start-up, once, to the one tool admin.
    assert model_admin.pages is tool_pages
    assert [page.url_name for page in tool_pages._pages.values()] == ["tenants_tool_console"]


@pytest.mark.django_db
def test_a_tools_page_links_the_added_pages_for_people_who_may_change_it() -> None:
    tool = ToolFactory()
    client = Client()
    client.force_login(MembershipFactory(tenant=tool.tenant, role="admin").user)

    page = client.get(reverse("admin:tenants_tool_change", args=[tool.pk]))

    assert page.context["object_pages"] == [
        ("Run in the console", reverse("admin:tenants_tool_console", args=[tool.pk]))
    ]
    assert "Run in the console" in page.content.decode()
