"""RFC 8693 token exchange, an oauthlib grant type: a confidential client of a tenant trades a person's access token
for that tenant's endpoint for a token to one upstream its admin allowed it, acting for the same person, with at most
the same scopes, expiring no later, without a refresh token, the client recorded as the actor (``ExchangedToken``).

Registered at the token endpoint by ``server.PlatformServer``; whether a client may use it is the validator's
``validate_grant_type``. Refusals, each before anything is issued: ``invalid_client`` (no confidential client
authenticated), ``unauthorized_client`` (not allowed to exchange), ``temporarily_unavailable`` (429: the client's
hourly limit, ``throttling``), ``invalid_request`` (a parameter, or a subject token that is not a live access token
of a person for the client's tenant: RFC 8693 §2.2.2), ``invalid_target`` (not one upstream the client may name),
``invalid_scope`` (beyond the subject token's scopes, or the client's). Each exchange an authenticated client of a
tenant asks for, issued or refused, is announced (``signals.token_exchanged``) for the activity log.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta

from django.utils import timezone
from oauth2_provider.models import AbstractAccessToken, AbstractApplication, get_access_token_model
from oauth2_provider.scopes import get_scopes_backend
from oauthlib.common import Request
from oauthlib.oauth2.rfc6749 import errors, utils
from oauthlib.oauth2.rfc6749.grant_types.base import GrantTypeBase
from oauthlib.oauth2.rfc6749.tokens import TokenBase

from mcp_infra.addresses import base_url_from_headers, is_tenant_endpoint
from mcp_platform.oauth.codes import checksum
from mcp_platform.oauth.models import ExchangedToken, TenantApplication
from mcp_platform.oauth.scopes import ordered
from mcp_platform.oauth.signals import TokenExchangeEvent, token_exchanged
from mcp_platform.oauth.throttling import token_exchange_refused
from tenants.selectors import membership_get, tenant_get_servable

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# Parameters that name one thing each; resource and audience may repeat (RFC 8693 §2.1) but must agree.
SINGLE_PARAMETERS = ("grant_type", "scope", "subject_token", "subject_token_type", "requested_token_type")
TARGET_PARAMETERS = ("resource", "audience")
SECOND = timedelta(seconds=1)
# Where the grant leaves the client once it authenticated as a confidential client: only its exchanges are announced.
AUTHENTICATED_ACTOR = "platform_exchange_actor"
# The subject token's row, named by this process's own code for a call's exchange (``call_exchange``): set on the
# Django request, never read from the HTTP parameters (DOT stores only digests of tokens, and the gateway keeps the
# caller's token to itself). It goes through every other check as a subject token would.
INTERNAL_SUBJECT = "platform_internal_subject_token_id"


class ExchangeLimitReached(errors.OAuth2Error):
    """The client used up its token exchanges for this hour: 429 with ``Retry-After``."""

    error = "temporarily_unavailable"
    status_code = 429

    def __init__(self, retry_after: int, request: Request) -> None:
        super().__init__(
            description="This client exchanged too many tokens this hour; try again later.", request=request
        )
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def _invalid_target(description: str, request: Request) -> errors.OAuth2Error:
    return errors.CustomOAuth2Error(error="invalid_target", description=description, request=request)


class TokenExchangeGrant(GrantTypeBase):
    def create_token_response(self, request: Request, token_handler: TokenBase) -> tuple[dict[str, str], str, int]:
        """The RFC 8693 §2.2.1 response, or the error of the first check that failed (nothing issued)."""
        headers = self._get_default_headers()
        try:
            subject = self.validate_token_request(request)
        except errors.OAuth2Error as e:
            _announce(request, error=e.error)
            headers.update(e.headers)
            return headers, e.json, e.status_code
        token = token_handler.create_token(request, refresh_token=False)
        remaining = math.floor((subject.expires - timezone.now()).total_seconds())
        token["expires_in"] = min(int(token["expires_in"]), remaining)
        token["issued_token_type"] = ACCESS_TOKEN_TYPE
        for modifier in self._token_modifiers:
            token = modifier(token)
        self.request_validator.save_token(token, request)
        self._record_actor(token["access_token"], request, subject)
        _announce(request, error=None)
        return headers, json.dumps(token), 200

    def validate_token_request(self, request: Request) -> AbstractAccessToken:
        """Check the request; returns the subject token (its row locked until the response is committed, so a
        revocation waits for the exchange and then revokes what it issued too). Raises ``OAuth2Error``."""
        for validator in self.custom_validators.pre_token:
            validator(request)
        if request.grant_type != GRANT_TYPE:
            raise errors.UnsupportedGrantTypeError(request=request)
        for param in SINGLE_PARAMETERS:
            if param in request.duplicate_params:
                raise errors.InvalidRequestError(description=f"Duplicate {param} parameter.", request=request)
        self.validate_client_confidential(request)
        if request.client.client_type != AbstractApplication.CLIENT_CONFIDENTIAL:
            raise errors.InvalidClientError(description="Token exchange is for confidential clients.", request=request)
        setattr(request, AUTHENTICATED_ACTOR, request.client)
        self.validate_grant_type(request)
        retry_after = token_exchange_refused(client_pk=request.client.pk)
        if retry_after is not None:
            raise ExchangeLimitReached(retry_after, request)
        self._validate_token_types(request)
        request.resource = [self._target(request)]
        subject = self._subject(request)
        request.user = subject.user
        request.scopes = self._scopes(request, subject)
        self.validate_scopes(request)
        for validator in self.custom_validators.post_token:
            validator(request)
        return subject

    def _validate_token_types(self, request: Request) -> None:
        if not _param(request, "subject_token") and _internal_subject(request) is None:
            raise errors.InvalidRequestError(description="Missing subject_token parameter.", request=request)
        if _param(request, "subject_token_type") != ACCESS_TOKEN_TYPE:
            raise errors.InvalidRequestError(
                description=f"Only access tokens are exchanged: subject_token_type must be {ACCESS_TOKEN_TYPE}.",
                request=request,
            )
        if _param(request, "requested_token_type") not in (None, ACCESS_TOKEN_TYPE):
            raise errors.InvalidRequestError(
                description=f"Only access tokens are issued: requested_token_type must be {ACCESS_TOKEN_TYPE}.",
                request=request,
            )
        if _param(request, "actor_token") or _param(request, "actor_token_type"):
            raise errors.InvalidRequestError(
                description="No actor_token: the actor is the client that authenticates.", request=request
            )

    def _target(self, request: Request) -> str:
        """The one upstream the request names (by ``resource``, ``audience`` or both), if the client may."""
        named = {value for key, value in request.decoded_body or [] if key in TARGET_PARAMETERS and value}
        if not named:
            raise _invalid_target("Name the upstream in the resource or audience parameter.", request)
        if len(named) > 1:
            raise _invalid_target("Name one upstream: a token has one audience.", request)
        (target,) = named
        client: TenantApplication = request.client
        if target not in client.exchange_target_list():
            raise _invalid_target(f"This client may not obtain tokens for {target}.", request)
        return target

    def _subject(self, request: Request) -> AbstractAccessToken:
        """The subject token: a live access token of an active person, for an endpoint of the client's (servable)
        tenant, that the person may still use. Raises ``InvalidRequestError`` (RFC 8693 §2.2.2)."""
        client: TenantApplication = request.client
        internal = _internal_subject(request)
        named = (
            {"pk": internal}
            if internal is not None
            else {"token_checksum": checksum(_param(request, "subject_token") or "")}
        )
        subject = (
            get_access_token_model()
            .objects.select_for_update()
            # At least a second left: the issued token lives whole seconds, never past the subject token.
            .filter(**named, expires__gt=timezone.now() + SECOND)
            .first()
        )
        if subject is None:
            raise errors.InvalidRequestError(
                description="The subject_token is not an active access token of this authorization server.",
                request=request,
            )
        tenant = tenant_get_servable(slug=client.tenant.slug) if client.tenant is not None else None
        base_url = base_url_from_headers(request.headers)
        resource = subject.resource
        application = subject.application
        if (
            tenant is None
            or not (
                isinstance(resource, list)
                and len(resource) == 1
                and isinstance(resource[0], str)
                and is_tenant_endpoint(resource[0], base_url, tenant.slug)
            )
            or application is None
            or application.tenant_id not in (None, client.tenant_id)
        ):
            raise errors.InvalidRequestError(
                description="The subject_token is not for this client's workspace.", request=request
            )
        user = subject.user
        if user is None:
            raise errors.InvalidRequestError(
                description="The subject_token acts for no person (a machine client's token).", request=request
            )
        if not user.is_active or membership_get(tenant=tenant, user=user) is None:
            raise errors.InvalidRequestError(
                description="The subject_token's person may no longer use this workspace.", request=request
            )
        return subject

    def _scopes(self, request: Request, subject: AbstractAccessToken) -> list[str]:
        """The requested scopes, all held by the subject token; none requested: those of the subject token's that
        the client may be granted. The validator then checks them against what the client may be granted."""
        held = subject.scope.split()
        requested = utils.scope_to_list(request.scope) if request.scope else None
        if requested is None:
            available = set(get_scopes_backend().get_available_scopes(application=request.client, request=request))
            granted = ordered(scope for scope in held if scope in available)
            if not granted:
                raise errors.InvalidScopeError(
                    description="This client may be granted none of the subject_token's scopes.", request=request
                )
            return granted
        wider = sorted(set(requested) - set(held))
        if wider:
            raise errors.InvalidScopeError(
                description=f"The subject_token does not hold {' '.join(wider)}: an exchange never widens scopes.",
                request=request,
            )
        return ordered(requested)

    def _record_actor(self, issued: str, request: Request, subject: AbstractAccessToken) -> None:
        """Record the client as the issued token's actor and where it came from; hold its expiry to the subject's
        (``expires_in`` is whole seconds, counted before the row was written)."""
        row = get_access_token_model().objects.get(token_checksum=checksum(issued))
        if row.expires > subject.expires:
            row.expires = subject.expires
            row.save(update_fields=["expires"])
        ExchangedToken.objects.create(
            access_token=row,
            actor=request.client,
            subject_token_id=subject.pk,
            subject_client_id=subject.application.client_id,
            subject_resource=subject.resource[0],
        )


def _announce(request: Request, *, error: str | None) -> None:
    """Send ``token_exchanged`` for an exchange asked for by an authenticated confidential client of a tenant."""
    actor: TenantApplication | None = getattr(request, AUTHENTICATED_ACTOR, None)
    if actor is None or actor.tenant_id is None:
        return
    named = sorted({value for key, value in request.decoded_body or [] if key in TARGET_PARAMETERS and value})
    user = getattr(request, "user", None)
    asked = utils.scope_to_list(request.scope) if request.scope else []
    scopes = request.scopes if error is None else asked
    token_exchanged.send(
        sender=TokenExchangeGrant,
        event=TokenExchangeEvent(
            tenant_id=actor.tenant_id,
            user_id=getattr(user, "pk", None),
            client_id=actor.client_id,
            client_name=actor.name,
            target=" ".join(named),
            scope=" ".join(scopes or []),
            error=error,
        ),
    )


def _param(request: Request, name: str) -> str | None:
    """A body parameter oauthlib does not name (``subject_token``, ...), None when absent or empty."""
    value = getattr(request, name, None)
    return value if isinstance(value, str) and value else None


def _internal_subject(request: Request) -> int | None:
    """The subject token row this process's own code named (``INTERNAL_SUBJECT``), taken out of the credentials
    oauthlib merges into the response."""
    extra = request.extra_credentials
    if not isinstance(extra, dict):
        return None
    if INTERNAL_SUBJECT in extra:
        setattr(request, INTERNAL_SUBJECT, extra.pop(INTERNAL_SUBJECT))
    found = getattr(request, INTERNAL_SUBJECT, None)
    return found if isinstance(found, int) else None
