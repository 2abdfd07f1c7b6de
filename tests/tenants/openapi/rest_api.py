"""A small real REST API (FastAPI) whose generated OpenAPI 3.1 document the import tests read; run it with
``uvicorn tests.tenants.openapi.rest_api:app``. Writes need the bearer token ``TOKEN``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException, Query
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

TOKEN = "rest-api-test-token"

app = FastAPI(title="Pet shop", version="1.0.0")
bearer = HTTPBearer()


class NewPet(BaseModel):
    name: str = Field(description="What the pet answers to.")
    species: str = "cat"
    age: int | None = None


class Pet(NewPet):
    id: int


class PetPage(BaseModel):
    items: list[Pet]
    total: int


PETS: dict[int, Pet] = {1: Pet(id=1, name="Tom", species="cat", age=3)}


def authorized(credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)]) -> None:
    if credentials.credentials != TOKEN:
        raise HTTPException(status_code=403, detail="wrong token")


@app.get("/pets", operation_id="list_pets", summary="List pets", response_model=PetPage)
def list_pets(
    species: Annotated[str | None, Query(description="Only this species.")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    x_request_id: Annotated[str | None, Header()] = None,
) -> PetPage:
    found = [pet for pet in PETS.values() if species is None or pet.species == species]
    return PetPage(items=found[:limit], total=len(found))


@app.get("/pets/{pet_id}", operation_id="get_pet", summary="Show one pet", response_model=Pet)
def get_pet(pet_id: int) -> Pet:
    if pet_id not in PETS:
        raise HTTPException(status_code=404, detail=f"no pet {pet_id}")
    return PETS[pet_id]


@app.post("/pets", operation_id="create_pet", summary="Add a pet", response_model=Pet, status_code=201)
def create_pet(pet: NewPet, _: Annotated[None, Depends(authorized)]) -> Pet:
    created = Pet(id=max(PETS, default=0) + 1, **pet.model_dump())
    PETS[created.id] = created
    return created


@app.delete("/pets/{pet_id}", operation_id="delete_pet", summary="Remove a pet", status_code=204)
def delete_pet(pet_id: int, _: Annotated[None, Depends(authorized)]) -> None:
    PETS.pop(pet_id, None)
