"""factory_boy factories for the platform's models; each builds a valid row with the least set up."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model

from tenants.models import Backend, Membership, Prompt, Resource, ResourceTemplate, Tenant, Tool


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password("correct horse battery staple")


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())
    instructions = "Use the tools wisely."


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Membership.Role.MEMBER


def _text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class ToolFactory(factory.django.DjangoModelFactory):
    """A static tool answering with one text item."""

    class Meta:
        model = Tool

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"tool_{n:04d}")
    description = factory.LazyAttribute(lambda t: f"The {t.name} tool.")
    input_schema = factory.LazyFunction(lambda: {"type": "object", "properties": {}})
    backend = Backend.STATIC
    config = factory.LazyAttribute(lambda t: _text_result(f"{t.name} answered"))
    required_scopes = ""


class ResourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Resource

    tenant = factory.SubFactory(TenantFactory)
    uri = factory.Sequence(lambda n: f"docs://page/{n:04d}")
    name = factory.Sequence(lambda n: f"page-{n:04d}")
    mime_type = "text/plain"
    text = factory.LazyAttribute(lambda r: f"Contents of {r.uri}")


class ResourceTemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ResourceTemplate

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"template-{n:04d}")
    uri_template = factory.Sequence(lambda n: f"docs://t{n}/{{section}}")
    mime_type = "text/plain"
    backend = Backend.STATIC
    config = factory.LazyFunction(lambda: {"text": "Section {section}"})
    completions = factory.LazyFunction(dict)


class PromptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Prompt

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"prompt_{n:04d}")
    description = "A prompt."
    arguments = factory.LazyFunction(lambda: [{"name": "topic", "description": "What to talk about", "required": True}])
    completions = factory.LazyFunction(dict)
    messages = factory.LazyFunction(
        lambda: [{"role": "user", "content": {"type": "text", "text": "Tell me about {{topic}}."}}]
    )


class OAuthClientFactory(factory.django.DjangoModelFactory):
    """A public native client (authorization code + PKCE) registered for a loopback redirect."""

    class Meta:
        model = "oauth.TenantApplication"

    name = factory.Sequence(lambda n: f"Client {n}")
    client_type = "public"
    authorization_grant_type = "authorization-code"
    redirect_uris = "http://127.0.0.1/callback"
    tenant = None


def access_token_create(
    *,
    user: Any,
    application: Any,
    resource: list[str],
    scope: str = "mcp:tools mcp:resources mcp:prompts",
    expires_in: int = 3600,
) -> str:
    """An access token row as django-oauth-toolkit stores it (hashed at rest); returns the raw token."""
    import secrets
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model, set_token_value

    raw = secrets.token_urlsafe(30)
    token = get_access_token_model()(
        user=user,
        application=application,
        scope=scope,
        resource=resource,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    set_token_value(token, raw)
    token.save()
    return raw
