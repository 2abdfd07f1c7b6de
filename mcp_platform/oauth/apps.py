"""App config of the OAuth glue around django-oauth-toolkit."""

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "mcp_platform.oauth"
    label = "oauth"
    verbose_name = "OAuth"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from mcp_platform.oauth import checks  # noqa: F401  (registers the system checks)
        from mcp_platform.oauth.call_exchange import exchange_for_call
        from tenants.connections.credentials import register_token_exchanger

        # Upstreams that trust this platform's authorization server get tokens exchanged for the caller's.
        register_token_exchanger(exchange_for_call)
