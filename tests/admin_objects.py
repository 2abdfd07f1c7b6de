"""One row of every model the admin shows, made for a given tenant: the registry the admin isolation test builds
its fixtures from. A model registered in the admin without an entry here fails that test by name."""

from __future__ import annotations

import secrets as token_bytes
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, IDToken, RefreshToken

from mcp_platform.jobs.models import ToolRun
from mcp_platform.oauth.machine_clients import machine_client_create
from mcp_platform.oauth.models import MachineClient, TenantApplication
from tenants import secrets
from tenants.backends.python_grants import python_function_grant
from tenants.models import (
    Invitation,
    Membership,
    OpenApiSource,
    Prompt,
    PythonFunctionGrant,
    Resource,
    ResourceTemplate,
    Secret,
    Server,
    Tenant,
    Tool,
)
from tests.factories import (
    MembershipFactory,
    OAuthClientFactory,
    PromptFactory,
    ResourceFactory,
    ResourceTemplateFactory,
    ToolFactory,
    UserFactory,
)

Maker = Callable[[Tenant], models.Model]
# By label, so a maker can be written for a model another branch brings before it is merged.
ADMIN_OBJECTS: dict[str, Maker] = {}


def makes(*model_classes: type[models.Model] | str) -> Callable[[Maker], Maker]:
    def register(maker: Maker) -> Maker:
        for model in model_classes:
            ADMIN_OBJECTS[model if isinstance(model, str) else model._meta.label] = maker
        return maker

    return register


def admin_object(model: type[models.Model], tenant: Tenant) -> models.Model:
    """A row of ``model`` that belongs to ``tenant`` (or, for platform models, is named after it)."""
    maker = ADMIN_OBJECTS.get(model._meta.label)
    if maker is None:
        raise LookupError(
            f"No fixture for {model._meta.label}: it is registered in the admin, so add a maker for it to "
            "tests/admin_objects.py (the isolation test must reach every registered model)."
        )
    return maker(tenant)


def person(tenant: Tenant | None, role: str | None, username: str, **flags: Any) -> Any:
    """A user named ``username`` (``flags`` such as ``is_superuser``), with ``role`` in ``tenant`` unless either is
    None."""
    user = UserFactory(username=username, email=f"{username}@example.com", **flags)
    if tenant is not None and role is not None:
        MembershipFactory(tenant=tenant, user=user, role=role)
    return user


def _application(tenant: Tenant) -> TenantApplication:
    app = TenantApplication.objects.filter(tenant=tenant, name=f"{tenant.slug} app").first()
    return app or OAuthClientFactory(tenant=tenant, name=f"{tenant.slug} app")


def _person(tenant: Tenant, role: str) -> Any:
    return UserFactory(username=f"{tenant.slug}-{role}", email=f"{role}@{tenant.slug}.example")


@makes(Tenant)
def _tenant(tenant: Tenant) -> Tenant:
    return tenant


@makes(Membership)
def _membership(tenant: Tenant) -> Membership:
    return MembershipFactory(tenant=tenant, user=_person(tenant, "member"), role=Membership.Role.MEMBER)


@makes(Tool)
def _tool(tenant: Tenant) -> Tool:
    return ToolFactory(tenant=tenant, name=f"{tenant.slug}_tool")


@makes(Resource)
def _resource(tenant: Tenant) -> Resource:
    return ResourceFactory(tenant=tenant, uri=f"docs://{tenant.slug}/readme", name=f"{tenant.slug}-readme")


@makes(ResourceTemplate)
def _template(tenant: Tenant) -> ResourceTemplate:
    return ResourceTemplateFactory(tenant=tenant, name=f"{tenant.slug}-pages", uri_template=f"{tenant.slug}://{{p}}")


@makes(Prompt)
def _prompt(tenant: Tenant) -> Prompt:
    return PromptFactory(tenant=tenant, name=f"{tenant.slug}-prompt")


@makes(Server)
def _server(tenant: Tenant) -> Server:
    from tenants.servers import server_create

    found = Server.objects.filter(tenant=tenant, slug=f"{tenant.slug}-server").first()
    return found or server_create(tenant=tenant, slug=f"{tenant.slug}-server", title=f"{tenant.slug} server")


@makes(Secret)
def _secret(tenant: Tenant) -> Secret:
    return secrets.secret_set(tenant=tenant, name=f"{tenant.slug}_key", value="not-for-other-tenants")


@makes(TenantApplication)
def _client(tenant: Tenant) -> TenantApplication:
    return _application(tenant)


@makes(MachineClient)
def _machine_client(tenant: Tenant) -> MachineClient:
    client, _ = machine_client_create(tenant=tenant, name=f"{tenant.slug} robot", scopes=["mcp:tools"])
    return MachineClient.objects.get(pk=client.pk)


@makes(ToolRun)
def _tool_run(tenant: Tenant) -> ToolRun:
    return ToolRun.objects.create(
        id=f"{tenant.slug}-run-{token_bytes.token_hex(4)}",
        tenant=tenant,
        principal="user:1",
        protocol_version="2026-07-28",
        tool_name=f"{tenant.slug}_tool",
        ttl_ms=60_000,
        expires_at=timezone.now() + timedelta(minutes=1),
    )


@makes("activity.ActivityRecord")
def _activity(tenant: Tenant) -> models.Model:
    from mcp_platform.activity.models import ActivityRecord

    return ActivityRecord.objects.create(
        tenant=tenant,
        at=timezone.now(),
        method="tools/call",
        target=f"{tenant.slug}_tool",
        principal="1",
        client_name=f"{tenant.slug} client",
        request_id=f"{tenant.slug}-1",
        duration_ms=1.5,
    )


# Platform models: not any tenant's, named after one so that a page listing them would show it.


@makes(UserFactory._meta.model)
def _user(tenant: Tenant) -> Any:
    return _person(tenant, "person")


@makes(Group)
def _group(tenant: Tenant) -> Group:
    return Group.objects.get_or_create(name=f"{tenant.slug} group")[0]


@makes(AccessToken)
def _access_token(tenant: Tenant) -> AccessToken:
    return AccessToken.objects.create(
        user=_person(tenant, "person"),
        application=_application(tenant),
        token=token_bytes.token_urlsafe(30),
        expires=timezone.now() + timedelta(hours=1),
        scope="mcp:tools",
    )


@makes(RefreshToken)
def _refresh_token(tenant: Tenant) -> RefreshToken:
    access = _access_token(tenant)
    return RefreshToken.objects.create(
        user=access.user, application=access.application, token=token_bytes.token_urlsafe(30), access_token=access
    )


@makes(Grant)
def _grant(tenant: Tenant) -> Grant:
    return Grant.objects.create(
        user=_person(tenant, "person"),
        application=_application(tenant),
        code=token_bytes.token_urlsafe(30),
        expires=timezone.now() + timedelta(minutes=1),
        redirect_uri="http://127.0.0.1/callback",
        scope="mcp:tools",
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )


@makes(IDToken)
def _id_token(tenant: Tenant) -> IDToken:
    return IDToken.objects.create(
        user=_person(tenant, "person"),
        application=_application(tenant),
        expires=timezone.now() + timedelta(hours=1),
        scope="openid",
    )


@makes(OpenApiSource)
def _openapi_source(tenant: Tenant) -> OpenApiSource:
    source = OpenApiSource.objects.create(
        tenant=tenant,
        name=f"{tenant.slug} api",
        location=f"https://{tenant.slug}.example/openapi.json",
        document_sha256="0" * 64,
        imported_at=timezone.now(),
    )
    ToolFactory(tenant=tenant, name=f"{tenant.slug}_imported", openapi_source=source)
    return source


@makes(Invitation)
def _invitation(tenant: Tenant) -> Invitation:
    now = timezone.now()
    return Invitation.objects.create(
        tenant=tenant,
        email=f"invitee@{tenant.slug}.example",
        role=Membership.Role.ADMIN,
        token_digest=token_bytes.token_hex(32),
        sent_at=now,
        expires_at=now + timedelta(days=7),
    )


@makes(PythonFunctionGrant)
def _python_grant(tenant: Tenant) -> PythonFunctionGrant:
    return python_function_grant(tenant=tenant, function="demo.echo")


@makes("tenants.Upstream")
def _upstream(tenant: Tenant) -> models.Model:
    # Disabled: nothing connects to it; the admin shows and scopes it like any other row.
    upstream = apps.get_model("tenants", "Upstream")
    return upstream._default_manager.create(
        tenant=tenant, name=f"{tenant.slug}_upstream", url=f"https://mcp.{tenant.slug}.example/mcp", enabled=False
    )


@makes("quotas.RateLimit")
def _rate_limit(tenant: Tenant) -> models.Model:
    from mcp_platform.quotas.services import rate_limit_create

    return rate_limit_create(
        tenant=tenant, scope="client", client_id=f"{tenant.slug}-client", rate=60, period=60, burst=10
    )


@makes("quotas.RateCeiling")
def _rate_ceiling(tenant: Tenant) -> models.Model:
    from mcp_platform.quotas.services import rate_ceiling_set

    return rate_ceiling_set(tenant=tenant, rate=6000, period=60, burst=1000)


@makes("tenants.PersonalCredential")
def _personal_credential(tenant: Tenant) -> models.Model:
    # A member's own key for a tool of the tenant: the member and the tool are named after the tenant's slug.
    from tenants.connections.services import credential_store_key

    auth = {"type": "user_key", "placement": "bearer", "label": "API key"}
    tool = ToolFactory(
        tenant=tenant, name=f"{tenant.slug}_keyed", backend="http", config={"url": "https://api.example/", "auth": auth}
    )
    member = MembershipFactory(tenant=tenant, user=_person(tenant, "connected"), role=Membership.Role.MEMBER).user
    return credential_store_key(tenant_id=tenant.pk, user_id=member.pk, target=f"tool:{tool.pk}", key="k-1")
