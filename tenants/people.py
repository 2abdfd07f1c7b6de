"""Getting people into a tenant: invitations by e-mail (who may invite whom, the single-use link, acceptance by
a new or an existing account of the invited address), and the names the admin shows for principals.

An invitation's link carries a random token; only its SHA-256 digest is stored, so a link is good for exactly the
invitation it was made for, until it is accepted, revoked, resent (a new link) or expires.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from tenants import services
from tenants.models import Invitation, Membership, Tenant

if TYPE_CHECKING:
    from django.contrib.auth.models import User

INVITATION_LIFETIME = timedelta(days=7)
# At most this many invitations of a tenant wait for an answer at once (a flood of mail is a flood of links).
PENDING_LIMIT = 50
# A resend to the same address waits this long after the last e-mail.
RESEND_INTERVAL = timedelta(minutes=1)

OWNER, ADMIN, MEMBER = (role.value for role in Membership.Role)
# Which roles a person of each role may invite: owners anyone, admins admins and members, members nobody.
INVITABLE_BY: dict[str, tuple[str, ...]] = {OWNER: (OWNER, ADMIN, MEMBER), ADMIN: (ADMIN, MEMBER), MEMBER: ()}
ROLE_RANK = {MEMBER: 0, ADMIN: 1, OWNER: 2}

LinkFor = Callable[[str], str]


class InvitationState(Enum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REVOKED = "revoked"
    EXPIRED = "expired"
    UNKNOWN = "unknown"  # no invitation has this link: mistyped, cut short, tampered with, or replaced by a resend


def invitation_state(invitation: Invitation, *, now: Any = None) -> InvitationState:
    if invitation.accepted_at is not None:
        return InvitationState.ACCEPTED
    if invitation.revoked_at is not None:
        return InvitationState.REVOKED
    if invitation.expires_at <= (now or timezone.now()):
        return InvitationState.EXPIRED
    return InvitationState.PENDING


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _new_token() -> tuple[str, str]:
    token = secrets.token_urlsafe(32)
    return token, _digest(token)


def _pending(queryset: Any) -> Any:
    return queryset.filter(accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())


def invitations_pending(*, tenant: Tenant) -> QuerySet[Invitation]:
    """The tenant's invitations waiting for an answer, oldest first, with who sent them."""
    return _pending(Invitation.objects.filter(tenant=tenant)).select_related("invited_by").order_by("created_at", "pk")


# ---- who may invite whom ------------------------------------------------------------------------------------


def role_in(*, user: User, tenant_id: int) -> str | None:
    """``user``'s role in the tenant for inviting: owner for superusers, else their membership's, or None."""
    if user.is_superuser and user.is_active:
        return OWNER
    return Membership.objects.filter(user_id=user.pk, tenant_id=tenant_id).values_list("role", flat=True).first()


def invitable_roles(*, user: User, tenant_id: int) -> tuple[str, ...]:
    """The roles ``user`` may invite people to in the tenant (none for members and outsiders)."""
    role = role_in(user=user, tenant_id=tenant_id)
    return INVITABLE_BY.get(role, ()) if role else ()


def invitation_may_manage(*, user: User, invitation: Invitation) -> bool:
    """Whether ``user`` may resend or revoke ``invitation``: whoever may invite its role to its tenant."""
    return invitation.role in invitable_roles(user=user, tenant_id=invitation.tenant_id)


def invitation_validate(*, tenant: Tenant, email: str, role: str, by: User) -> str:
    """The normalised address, or ``ValidationError`` keyed by field saying why ``by`` may not invite ``email``
    to ``tenant`` as ``role`` now."""
    email = get_user_model().objects.normalize_email((email or "").strip())
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": ["Enter a valid e-mail address."]}) from None
    allowed = invitable_roles(user=by, tenant_id=tenant.pk)
    if role not in ROLE_RANK:
        raise ValidationError({"role": ["Choose owner, admin or member."]})
    if not allowed:
        raise ValidationError({"tenant": [f"You may not invite people to {tenant.slug}."]})
    if role not in allowed:
        raise ValidationError({"role": ["Admins invite admins and members; only an owner invites an owner."]})
    members = Membership.objects.filter(tenant=tenant, user__email__iexact=email)
    if members.exists():
        raise ValidationError({"email": ["Someone with this e-mail address is already a member of this tenant."]})
    open_invitations = _pending(Invitation.objects.filter(tenant=tenant))
    if open_invitations.filter(email__iexact=email).exists():
        raise ValidationError(
            {"email": ["This address already has an invitation waiting: resend it from the list of invitations."]}
        )
    if open_invitations.count() >= PENDING_LIMIT:
        raise ValidationError(
            {
                NON_FIELD_ERRORS: [
                    f"{tenant.slug} has {PENDING_LIMIT} invitations waiting: revoke some, or wait until they are "
                    "accepted or expire."
                ]
            }
        )
    return email


# ---- the e-mail ---------------------------------------------------------------------------------------------


def _send(invitation: Invitation, link: str) -> None:
    inviter = invitation.invited_by.get_username() if invitation.invited_by else "Platform staff"
    tenant = invitation.tenant
    expires = timezone.localtime(invitation.expires_at).strftime("%d %B %Y, %H:%M %Z")
    body = (
        f"{inviter} invites you to join {tenant.name} ({tenant.slug}) on the MCP platform as {invitation.role}.\n\n"
        f"Open this link to accept; you create your account there, or sign in with the one of this address:\n\n"
        f"{link}\n\n"
        f"The link works once, for {invitation.email} only, until {expires}.\n"
        "If you did not expect it, ignore this e-mail.\n"
    )
    name = " ".join(tenant.name.split())  # a header holds one line
    send_mail(f"Invitation to {name} on the MCP platform", body, None, [invitation.email])


# ---- writes -------------------------------------------------------------------------------------------------


def invitation_create(*, tenant: Tenant, email: str, role: str, by: User, link_for: LinkFor) -> Invitation:
    """Invite ``email`` to ``tenant`` as ``role`` and send the link (``link_for(token)``) by e-mail. Raises
    ``ValidationError`` (see ``invitation_validate``); a mail error propagates, the invitation stays to resend."""
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()  # one inviter of a tenant at a time
        address = invitation_validate(tenant=tenant, email=email, role=role, by=by)
        token, digest = _new_token()
        now = timezone.now()
        invitation = Invitation.objects.create(
            tenant=tenant,
            email=address,
            role=role,
            token_digest=digest,
            invited_by=by,
            sent_at=now,
            expires_at=now + INVITATION_LIFETIME,
        )
    _send(invitation, link_for(token))
    return invitation


def invitation_resend(*, invitation: Invitation, by: User, link_for: LinkFor) -> Invitation:
    """Send a new link (the old one stops working) and give it a full lifetime again. Raises ``PermissionDenied``
    or ``ValidationError`` (not pending, or sent less than ``RESEND_INTERVAL`` ago)."""
    if not invitation_may_manage(user=by, invitation=invitation):
        raise PermissionDenied("You may not resend this invitation.")
    with transaction.atomic():
        stored = (
            Invitation.objects.select_for_update(of=("self",))
            .select_related("tenant", "invited_by")
            .get(pk=invitation.pk)
        )
        state = invitation_state(stored)
        if state in (InvitationState.ACCEPTED, InvitationState.REVOKED):
            raise ValidationError(f"The invitation of {stored.email} was {state.value}: it cannot be sent again.")
        now = timezone.now()
        if state is InvitationState.PENDING and stored.sent_at > now - RESEND_INTERVAL:
            raise ValidationError(f"The invitation of {stored.email} was sent less than a minute ago.")
        token, stored.token_digest = _new_token()
        stored.sent_at, stored.expires_at = now, now + INVITATION_LIFETIME
        stored.save(update_fields=["token_digest", "sent_at", "expires_at"])
    _send(stored, link_for(token))
    return stored


def invitation_revoke(*, invitation: Invitation, by: User) -> bool:
    """Close ``invitation`` so that its link opens nothing; False when it was already accepted or revoked.
    Raises ``PermissionDenied``."""
    if not invitation_may_manage(user=by, invitation=invitation):
        raise PermissionDenied("You may not revoke this invitation.")
    updated = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    return updated > 0


@dataclass(frozen=True)
class Found:
    """What a link opens: its invitation (None for an unknown link) and the invitation's state."""

    invitation: Invitation | None
    state: InvitationState


TOKEN_MAX_LENGTH = 128


def invitation_find(*, token: str) -> Found:
    """The invitation ``token`` opens, in whatever state it is."""
    if not token or len(token) > TOKEN_MAX_LENGTH:
        return Found(None, InvitationState.UNKNOWN)
    invitation = Invitation.objects.select_related("tenant").filter(token_digest=_digest(token)).first()
    if invitation is None:
        return Found(None, InvitationState.UNKNOWN)
    return Found(invitation, invitation_state(invitation))


def same_address(user: User, invitation: Invitation) -> bool:
    return bool(user.email) and user.email.strip().casefold() == invitation.email.strip().casefold()


def invitation_accept(*, token: str, user: User) -> Membership:
    """Make ``user`` a member of the invitation's tenant with the invited role (a member already holding a higher
    role keeps it) and close the invitation. Raises ``ValidationError`` when the link opens no pending invitation
    or ``user``'s e-mail address is not the invited one."""
    with transaction.atomic():
        found = invitation_find(token=token)
        if found.invitation is None:
            raise ValidationError("This invitation link is not valid.", code="unknown")
        invitation = (
            Invitation.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=found.invitation.pk)
        )
        state = invitation_state(invitation)
        if state is not InvitationState.PENDING:
            raise ValidationError(f"This invitation is {state.value}.", code=state.value)
        if not user.is_active or not same_address(user, invitation):
            raise ValidationError(
                f"This invitation is for {invitation.email}; the account {user.get_username()} has another "
                "e-mail address.",
                code="wrong_address",
            )
        held = Membership.objects.filter(tenant=invitation.tenant, user=user).values_list("role", flat=True).first()
        role = invitation.role if held is None or ROLE_RANK[invitation.role] > ROLE_RANK[held] else held
        membership = services.membership_add(tenant=invitation.tenant, user=user, role=role)
        invitation.accepted_at, invitation.accepted_by = timezone.now(), user
        invitation.save(update_fields=["accepted_at", "accepted_by"])
    return membership


def invitation_accept_new_account(*, token: str, username: str, password: str) -> tuple[User, Membership]:
    """Create the account of the invited address (``username``, ``password`` checked by Django's validators) and
    accept with it, all or nothing. Raises ``ValidationError`` keyed by field (``username``, ``password``)."""
    with transaction.atomic():
        found = invitation_find(token=token)
        if found.invitation is None or found.state is not InvitationState.PENDING:
            raise ValidationError({NON_FIELD_ERRORS: [f"This invitation is {found.state.value}."]})
        user_model = get_user_model()
        user = user_model(username=username, email=found.invitation.email)
        user.set_unusable_password()
        user.full_clean(exclude=["password"])
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise ValidationError({"password": exc.error_list}) from None
        user.set_password(password)
        user.save()
        membership = invitation_accept(token=token, user=user)
    return user, membership


# ---- principals by name -------------------------------------------------------------------------------------


def principal_user_id(principal: str) -> int | None:
    """The account id in a principal as the platform stores one: ``2`` (the activity log), ``user:2`` or
    ``user:2 client:<id>`` (tool runs); None for ``client:<id>``, ``anonymous`` or anything else."""
    text = principal.strip()
    if text.isdigit():
        return int(text)
    for part in text.split(" "):
        kind, _, value = part.partition(":")
        if kind == "user" and value.isdigit():
            return int(value)
    return None


def _client_of(principal: str) -> str:
    for part in principal.split(" "):
        kind, _, value = part.partition(":")
        if kind == "client" and value:
            return value
    return ""


@dataclass(frozen=True)
class Person:
    """How a principal reads: ``name`` (a username, ``client <id>``, ``anonymous``) and, for a person, their
    e-mail address."""

    name: str
    email: str = ""

    def __str__(self) -> str:
        return f"{self.name} ({self.email})" if self.email else self.name


def people_of(principals: Iterable[str]) -> dict[str, Person]:
    """Each of ``principals`` (as stored in the activity log and tool runs) as a ``Person``: one query for all."""
    distinct = {p for p in principals if p is not None}
    ids = {uid for p in distinct if (uid := principal_user_id(p)) is not None}
    accounts: dict[int, tuple[str, str]] = {}
    if ids:
        user_model = get_user_model()
        rows = user_model._default_manager.filter(pk__in=ids).values_list("pk", user_model.USERNAME_FIELD, "email")
        accounts = {pk: (name, email) for pk, name, email in rows}
    named = {}
    for principal in distinct:
        uid = principal_user_id(principal)
        if uid is not None:
            name, email = accounts.get(uid, (f"deleted account #{uid}", ""))
            named[principal] = Person(name, email)
        elif client := _client_of(principal):
            named[principal] = Person(f"client {client}")
        else:
            named[principal] = Person(principal or "—")
    return named
