"""A REST API that trusts a platform instance as its OAuth authorization server, run as a process for the end-to-end
tests of tools that act as the person: ``python -m tests.upstreams.notes_api --port N --resource URL --issuer URL
--client-id ID`` with the client's secret in ``NOTES_API_CLIENT_SECRET`` (kept off the command line).

It learns the issuer's endpoints from its RFC 8414 metadata at start-up and checks the bearer token of every request
with the issuer's RFC 7662 introspection endpoint, authenticating as the confidential client: the token must be active
and name ``--resource`` in its audience (else 401 ``invalid_token``), and hold the operation's scopes (else 403
``insufficient_scope``); no token is a 401 with a bare ``Bearer`` challenge. Its OpenAPI document (``/openapi.json``)
describes one ``oauth2`` security scheme (authorization code) on the issuer's authorization and token endpoints, and
``/.well-known/oauth-protected-resource`` (RFC 9728) names the issuer.

Operations: ``GET /me`` (whom the token acts for, as introspection answered), ``GET /notes`` (``notes:read``: the
person's notes, a welcome note to start with) and ``POST /notes`` (``notes:write``). Notes are kept in memory, per
person.
"""

# No ``from __future__ import annotations``: FastAPI reads the operations' annotations at run time, and those name the
# scheme and the dependency made inside ``create_app``, which a postponed annotation could not find.
import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import httpx
import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Security
from fastapi.security import OAuth2AuthorizationCodeBearer, SecurityScopes
from pydantic import BaseModel, Field

SECRET_ENV = "NOTES_API_CLIENT_SECRET"
REALM = "notes"
READ, WRITE = "notes:read", "notes:write"
SCOPES = {READ: "Read your notes", WRITE: "Add notes"}
INTROSPECTION_TIMEOUT = 10.0
METADATA_PATH = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class NotesApiConfig:
    """Where the API is (its resource URL: the audience its tokens must name) and whom it trusts."""

    resource: str
    issuer: str
    client_id: str
    client_secret: str
    authorization_endpoint: str
    token_endpoint: str
    introspection_endpoint: str


class Me(BaseModel):
    username: str = Field(description="The person the token acts for.")
    sub: str = Field(description="Their id at the authorization server.")
    scope: str = Field(description="The scopes the token holds, separated by spaces.")
    client_id: str = Field(description="The OAuth client the token was issued to.")
    actor: str | None = Field(default=None, description="The client that exchanged the token for this API, if any.")


class NewNote(BaseModel):
    text: str = Field(min_length=1, max_length=1000, description="What to remember.")


class Note(NewNote):
    id: int


@dataclass
class Notebook:
    """Each person's notes, by their ``sub``."""

    notes: dict[str, list[Note]] = field(default_factory=dict)

    def of(self, me: Me) -> list[Note]:
        return self.notes.setdefault(me.sub, [Note(id=1, text=f"Welcome, {me.username}.")])


def challenge(config: NotesApiConfig, **params: str) -> str:
    """A ``WWW-Authenticate: Bearer`` value (RFC 6750 §3) pointing at the API's metadata (RFC 9728 §5.1)."""
    fields = {"realm": REALM, **params, "resource_metadata": f"{config.resource}{METADATA_PATH}"}
    return "Bearer " + ", ".join(f'{name}="{value}"' for name, value in fields.items())


def create_app(config: NotesApiConfig) -> FastAPI:
    """The API for ``config``; its introspection client lives as long as the app runs."""
    oauth2 = OAuth2AuthorizationCodeBearer(
        authorizationUrl=config.authorization_endpoint,
        tokenUrl=config.token_endpoint,
        refreshUrl=config.token_endpoint,
        scopes=SCOPES,
        scheme_name="notes_oauth",
        auto_error=False,  # the refusals below carry RFC 6750 challenges
    )
    notebook = Notebook()
    clients: list[httpx.AsyncClient] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=INTROSPECTION_TIMEOUT) as http:
            clients.append(http)
            yield

    def refuse(status: int, detail: str, **params: str) -> HTTPException:
        return HTTPException(status, detail, headers={"WWW-Authenticate": challenge(config, **params)})

    async def introspect(token: str) -> dict[str, Any]:
        answer = await clients[0].post(
            config.introspection_endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=(config.client_id, config.client_secret),
        )
        if answer.status_code != 200:
            raise HTTPException(503, f"The authorization server refused to introspect ({answer.status_code}).")
        found: dict[str, Any] = answer.json()
        return found

    async def holder(security_scopes: SecurityScopes, token: Annotated[str | None, Depends(oauth2)]) -> Me:
        if token is None:
            raise refuse(401, "Send a bearer token.")
        answer = await introspect(token)
        if answer.get("active") is not True:
            raise refuse(401, "The token is not active.", error="invalid_token")
        audience = answer.get("aud")
        if config.resource not in ([audience] if isinstance(audience, str) else audience or []):
            raise refuse(401, "The token is not for this API.", error="invalid_token")
        scope = str(answer.get("scope", ""))
        if not set(security_scopes.scopes) <= set(scope.split()):
            needed = " ".join(security_scopes.scopes)
            raise refuse(403, f"The token lacks {needed}.", error="insufficient_scope", scope=needed)
        actor = answer.get("act")
        return Me(
            username=str(answer.get("username", "")),
            sub=str(answer.get("sub", "")),
            scope=scope,
            client_id=str(answer.get("client_id", "")),
            actor=actor.get("client_id") if isinstance(actor, dict) else None,
        )

    app = FastAPI(title="Notes", version="1.0.0", servers=[{"url": config.resource}], lifespan=lifespan)

    @app.get("/me", operation_id="who_am_i", summary="Whom the token acts for", response_model=Me)
    async def me(holder: Annotated[Me, Security(holder)]) -> Me:
        return holder

    @app.get("/notes", operation_id="list_notes", summary="List your notes", response_model=list[Note])
    async def list_notes(holder: Annotated[Me, Security(holder, scopes=[READ])]) -> list[Note]:
        return notebook.of(holder)

    @app.post("/notes", operation_id="add_note", summary="Add a note", response_model=Note, status_code=201)
    async def add_note(note: NewNote, holder: Annotated[Me, Security(holder, scopes=[WRITE])]) -> Note:
        notes = notebook.of(holder)
        added = Note(id=len(notes) + 1, text=note.text)
        notes.append(added)
        return added

    @app.get(METADATA_PATH, include_in_schema=False)
    async def resource_metadata() -> dict[str, Any]:
        return {
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "scopes_supported": list(SCOPES),
            "bearer_methods_supported": ["header"],
        }

    return app


def discover(*, resource: str, issuer: str, client_id: str, client_secret: str) -> NotesApiConfig:
    """The config with the endpoints ``issuer``'s RFC 8414 metadata names. Raises ``SystemExit`` with the reason when
    the metadata cannot be read or names another issuer (RFC 8414 §3.3)."""
    url = f"{issuer.rstrip('/')}/.well-known/oauth-authorization-server"
    try:
        metadata = httpx.get(url, timeout=INTROSPECTION_TIMEOUT).raise_for_status().json()
    except (httpx.HTTPError, ValueError) as exc:
        raise SystemExit(f"notes_api: cannot read {url}: {exc}") from None
    if metadata.get("issuer") != issuer:
        raise SystemExit(f"notes_api: {url} names the issuer {metadata.get('issuer')!r}, not {issuer!r}")
    missing = [n for n in ("authorization_endpoint", "token_endpoint", "introspection_endpoint") if n not in metadata]
    if missing:
        raise SystemExit(f"notes_api: {url} names no {', '.join(missing)}")
    return NotesApiConfig(
        resource=resource,
        issuer=issuer,
        client_id=client_id,
        client_secret=client_secret,
        authorization_endpoint=metadata["authorization_endpoint"],
        token_endpoint=metadata["token_endpoint"],
        introspection_endpoint=metadata["introspection_endpoint"],
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.upstreams.notes_api", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--resource", required=True, help="the API's own URL: the audience its tokens must name")
    parser.add_argument("--issuer", required=True, help="the authorization server it trusts")
    parser.add_argument("--client-id", required=True, help="its confidential client there, for introspection")
    args = parser.parse_args(argv)
    secret = os.environ.get(SECRET_ENV)
    if not secret:
        parser.error(f"set {SECRET_ENV} to the client's secret")
    config = discover(resource=args.resource, issuer=args.issuer, client_id=args.client_id, client_secret=secret)
    uvicorn.run(create_app(config), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
