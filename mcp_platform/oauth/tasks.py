"""Celery housekeeping of the authorization server (idempotent, run by beat)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

from celery import shared_task
from django.core.management import call_command
from oauth2_provider.models import clear_expired

from mcp_infra.conf import platform_settings
from mcp_platform.oauth.codes import consumed_codes_purge
from mcp_platform.oauth.registration import dcr_clients_purge_unused
from tenants.connections.services import connect_links_purge


@shared_task(acks_late=True, ignore_result=True)
def oauth_purge_expired() -> dict[str, int]:
    """Expired tokens, codes and ID tokens (django-oauth-toolkit's ``cleartokens``), expired client metadata
    documents without live tokens (``clearcimdapplications``), unused self-registered clients, the
    memory of consumed authorization codes, and expired connect links."""
    clear_expired()
    call_command("clearcimdapplications", stdout=StringIO())
    lifetime = timedelta(seconds=platform_settings.DCR_UNUSED_CLIENT_LIFETIME)
    return {
        "unused_clients": dcr_clients_purge_unused(older_than=lifetime),
        "consumed_codes": consumed_codes_purge(),
        "connect_links": connect_links_purge(),
    }
