"""Tenant secrets: encrypted at rest, bound to their row, rotated by key, and never shown in the clear."""

from __future__ import annotations

import base64
import io
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from mcp_infra.conf import check_platform_settings
from tenants.models import Secret, Tenant
from tenants.secrets import SecretNotFound, SecretUnreadable, secret_delete, secret_set, secret_value
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PLAINTEXT = "sk-live-7f3a9c-PLAINTEXT-never-shown"
REPO = Path(__file__).resolve().parents[2]


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def keys(settings: Any, *values: str) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "SECRET_KEYS": list(values)}


@pytest.fixture
def key_a(settings: Any) -> str:
    key = new_key()
    keys(settings, key)
    return key


def _all_rows_as_text() -> str:
    """Every column of every table, as the database holds it."""
    parts = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            parts.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(parts)


def test_a_stored_value_reads_back_and_is_in_no_database_column_in_the_clear(tenant: Tenant, key_a: str) -> None:
    secret = secret_set(tenant=tenant, name="stripe.key", value=PLAINTEXT)

    assert secret_value(tenant_id=tenant.pk, name="stripe.key") == PLAINTEXT
    assert PLAINTEXT not in _all_rows_as_text()
    assert PLAINTEXT.encode() not in base64.b64decode(Secret.objects.get(pk=secret.pk).ciphertext)
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    assert PLAINTEXT not in dump.getvalue()
    assert "stripe.key" in dump.getvalue()


def test_the_same_value_stored_twice_gives_different_ciphertexts(tenant: Tenant, key_a: str) -> None:
    first = secret_set(tenant=tenant, name="one", value=PLAINTEXT).ciphertext
    second = secret_set(tenant=tenant, name="one", value=PLAINTEXT).ciphertext
    assert first != second
    assert Secret.objects.filter(tenant=tenant).count() == 1


def test_a_ciphertext_copied_to_another_tenant_or_name_does_not_decrypt(
    tenant: Tenant, other_tenant: Tenant, key_a: str
) -> None:
    original = secret_set(tenant=tenant, name="api", value=PLAINTEXT)
    secret_set(tenant=other_tenant, name="api", value="theirs")
    secret_set(tenant=tenant, name="other", value="mine")
    Secret.objects.filter(tenant=other_tenant, name="api").update(ciphertext=original.ciphertext)
    Secret.objects.filter(tenant=tenant, name="other").update(ciphertext=original.ciphertext)

    for tenant_id, name in ((other_tenant.pk, "api"), (tenant.pk, "other")):
        with pytest.raises(SecretUnreadable, match="does not decrypt") as refused:
            secret_value(tenant_id=tenant_id, name=name)
        assert PLAINTEXT not in str(refused.value)
    assert secret_value(tenant_id=tenant.pk, name="api") == PLAINTEXT


def test_a_tampered_ciphertext_does_not_decrypt(tenant: Tenant, key_a: str) -> None:
    stored = secret_set(tenant=tenant, name="api", value=PLAINTEXT)
    raw = bytearray(base64.b64decode(stored.ciphertext))
    raw[-1] ^= 1
    Secret.objects.filter(pk=stored.pk).update(ciphertext=base64.b64encode(bytes(raw)).decode())
    with pytest.raises(SecretUnreadable):
        secret_value(tenant_id=tenant.pk, name="api")


def test_a_missing_secret_is_named_in_the_error(tenant: Tenant, key_a: str) -> None:
    with pytest.raises(SecretNotFound, match="'nope'"):
        secret_value(tenant_id=tenant.pk, name="nope")
    with pytest.raises(SecretNotFound):
        secret_delete(tenant=tenant, name="nope")


def test_bad_names_and_empty_values_are_refused_and_store_nothing(tenant: Tenant, key_a: str) -> None:
    for name, value in (("has space", "v"), ("x" * 65, "v"), ("", "v"), ("ok", ""), ("ok", "a\x00b")):
        with pytest.raises(ValidationError):
            secret_set(tenant=tenant, name=name, value=value)
    assert not Secret.objects.exists()


def test_after_a_rotation_old_secrets_still_read_and_reencrypt_moves_them_to_the_new_key(
    tenant: Tenant, settings: Any
) -> None:
    old, new = new_key(), new_key()
    keys(settings, old)
    secret_set(tenant=tenant, name="a", value=PLAINTEXT)
    secret_set(tenant=tenant, name="b", value="second value")
    old_id = Secret.objects.get(name="a").key_id

    keys(settings, new, old)
    assert secret_value(tenant_id=tenant.pk, name="a") == PLAINTEXT
    secret_set(tenant=tenant, name="c", value="written after the rotation")
    new_id = Secret.objects.get(name="c").key_id
    assert new_id != old_id

    out = io.StringIO()
    call_command("secrets_reencrypt", stdout=out)
    assert "Re-encrypted 2 secret(s); 3 secret(s) are under the current key." in out.getvalue()
    assert set(Secret.objects.values_list("key_id", flat=True)) == {new_id}

    keys(settings, new)
    assert secret_value(tenant_id=tenant.pk, name="a") == PLAINTEXT
    assert secret_value(tenant_id=tenant.pk, name="b") == "second value"
    keys(settings, old)
    with pytest.raises(SecretUnreadable, match="no longer configured"):
        secret_value(tenant_id=tenant.pk, name="a")


def test_reencrypt_stops_with_a_clear_error_on_a_secret_no_key_reads(tenant: Tenant, settings: Any) -> None:
    keys(settings, new_key())
    secret_set(tenant=tenant, name="lost", value=PLAINTEXT)
    keys(settings, new_key())
    with pytest.raises(CommandError, match="'lost'") as refused:
        call_command("secrets_reencrypt", stdout=io.StringIO())
    assert PLAINTEXT not in str(refused.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must name at least one key"),
        (["not base64!"], "key 1 is not base64"),
        ([base64.b64encode(b"short").decode()], "key 1 decodes to 5 bytes, not 32"),
    ],
)
def test_a_bad_key_configuration_fails_the_system_check(settings: Any, value: list[str], message: str) -> None:
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "SECRET_KEYS": value}):
        errors = check_platform_settings(None)
    assert any(message in error.msg for error in errors), [e.msg for e in errors]


def test_the_same_key_twice_fails_the_system_check(settings: Any) -> None:
    key = new_key()
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "SECRET_KEYS": [key, key]}):
        assert [e.id for e in check_platform_settings(None)] == ["mcp_platform.E042"]


def test_secret_set_command_reads_the_value_from_stdin_and_never_prints_it(
    tenant: Tenant, key_a: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(PLAINTEXT + "\n"))
    out = io.StringIO()
    call_command("secret_set", "acme", "from-cli", stdout=out)
    assert secret_value(tenant_id=tenant.pk, name="from-cli") == PLAINTEXT
    assert PLAINTEXT not in out.getvalue()

    monkeypatch.setattr(sys, "stdin", io.StringIO(PLAINTEXT))
    with pytest.raises(CommandError, match="No tenant 'nobody'"):
        call_command("secret_set", "nobody", "x", stdout=io.StringIO())
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(CommandError, match="needs a value"):
        call_command("secret_set", "acme", "empty", stdout=io.StringIO())


def test_the_embedded_key_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MCP_SECRET_KEYS"}
    env.update({"MCP_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "mcp_platform.settings"})
    show = "from django.conf import settings; print(settings.MCP_PLATFORM['SECRET_KEYS'][0])"
    runs = [
        subprocess.run([sys.executable, "-c", show], env=env, cwd=REPO, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    path = tmp_path / "secrets_encryption_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert runs[0].stdout == runs[1].stdout == path.read_text().strip() + "\n"
    assert len(base64.b64decode(path.read_text())) == 32


# ---- admin ---------------------------------------------------------------------------------------------------


def test_the_admin_stores_a_value_it_never_shows_and_keeps_it_when_left_blank(
    admin_client: Any, tenant: Tenant, key_a: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pages = []
    add = reverse("admin:tenants_secret_add")
    refused = admin_client.post(add, {"tenant": tenant.pk, "name": "bad name", "value": PLAINTEXT})
    assert refused.status_code == 200
    pages.append(refused)
    added = admin_client.post(add, {"tenant": tenant.pk, "name": "api", "value": PLAINTEXT})
    assert added.status_code == 302
    secret = Secret.objects.get(tenant=tenant, name="api")
    change = reverse("admin:tenants_secret_change", args=[secret.pk])
    pages += [admin_client.get(change), admin_client.get(reverse("admin:tenants_secret_changelist")), added]
    pages.append(admin_client.get(reverse("admin:tenants_secret_history", args=[secret.pk])))
    pages.append(admin_client.get(reverse("admin:tenants_secret_delete", args=[secret.pk])))

    kept = admin_client.post(change, {"value": ""})
    assert kept.status_code == 302
    assert secret_value(tenant_id=tenant.pk, name="api") == PLAINTEXT
    replaced = admin_client.post(change, {"value": "a new value"})
    assert replaced.status_code == 302
    assert secret_value(tenant_id=tenant.pk, name="api") == "a new value"

    for page in pages:
        assert PLAINTEXT not in page.content.decode()
    assert PLAINTEXT not in caplog.text
    assert PLAINTEXT not in _all_rows_as_text()  # the admin's own log entries included


def test_a_new_secret_needs_a_value_in_the_admin(admin_client: Any, tenant: Tenant, key_a: str) -> None:
    page = admin_client.post(reverse("admin:tenants_secret_add"), {"tenant": tenant.pk, "name": "api", "value": ""})
    assert page.status_code == 200
    assert "A new secret needs a value." in page.content.decode()
    assert not Secret.objects.exists()


def test_a_value_the_service_refuses_is_a_form_error_in_the_admin(
    admin_client: Any, tenant: Tenant, key_a: str
) -> None:
    data = {"tenant": tenant.pk, "name": "api", "value": "bad\x00value"}
    page = admin_client.post(reverse("admin:tenants_secret_add"), data)
    assert page.status_code == 200
    assert "Null characters are not allowed." in page.content.decode()
    assert not Secret.objects.exists()


def test_deleting_a_secret_in_the_admin_removes_it(admin_client: Any, tenant: Tenant, key_a: str) -> None:
    secret = secret_set(tenant=tenant, name="api", value=PLAINTEXT)
    page = admin_client.post(reverse("admin:tenants_secret_delete", args=[secret.pk]), {"post": "yes"})
    assert page.status_code == 302
    assert not Secret.objects.exists()


def test_only_superusers_widen_a_tenants_outbound_networks(client: Any, admin_client: Any, tenant: Tenant) -> None:
    from django.contrib.auth.models import Permission

    staff = UserFactory(username="staff", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["change_tenant", "view_tenant"]))
    client.force_login(staff)
    change = reverse("admin:tenants_tenant_change", args=[tenant.pk])
    form = {
        "slug": tenant.slug,
        "name": tenant.name,
        "status": "active",
        "allowed_origins": "[]",
        "instructions": "",
        "outbound_allowed_networks": '["10.0.0.0/8"]',
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
    }
    assert client.post(change, form).status_code == 302
    tenant.refresh_from_db()
    assert tenant.outbound_allowed_networks == []

    assert admin_client.post(change, form).status_code == 302
    tenant.refresh_from_db()
    assert tenant.outbound_allowed_networks == ["10.0.0.0/8"]
    refused = admin_client.post(change, {**form, "outbound_allowed_networks": '["not-a-net"]'})
    assert refused.status_code == 200
    assert "is not an address or network" in refused.content.decode()


def test_a_generated_key_on_the_production_path_is_warned_about(settings: Any, tmp_path: Path) -> None:
    from mcp_infra.conf import check_secret_keys_are_shared

    generated = new_key()
    (tmp_path / "secrets_encryption_key").write_text(generated)
    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    keys(settings, generated)
    assert [w.id for w in check_secret_keys_are_shared(None)] == ["mcp_platform.W040"]
    keys(settings, new_key(), generated)
    assert [w.id for w in check_secret_keys_are_shared(None)] == ["mcp_platform.W040"]
    keys(settings, new_key())
    assert check_secret_keys_are_shared(None) == []
    settings.REDIS_URL = ""
    keys(settings, generated)
    assert check_secret_keys_are_shared(None) == []
