"""People by name wherever an admin page shows a principal (``2``, ``user:2 client:…``): a column, a row's field
and a filter's choices read ``username (e-mail)`` through ``tenants.people.people_of``, one query per page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from tenants.people import Person, people_of

NAMES_ATTRIBUTE = "_principal_person"


def person_of(obj: Any, field: str = "principal") -> Person:
    """How ``obj``'s principal reads: named with its page's other rows when a changelist fetched them, else alone."""
    person = getattr(obj, NAMES_ATTRIBUTE, None)
    if person is None:
        principal = getattr(obj, field) or ""
        person = people_of([principal])[principal]
    return person


class PrincipalsNamed:
    """A model admin mixin: the rows of each changelist page have their principals named with one query, and
    ``principal_person`` is the column (and the object page's field) that shows them."""

    principal_field = "principal"

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        base: type[ChangeList] = super().get_changelist(request, **kwargs)  # type: ignore[misc]
        field = self.principal_field

        class NamedChangeList(base):  # type: ignore[misc, valid-type]
            def get_results(self, request: HttpRequest) -> None:
                super().get_results(request)
                rows = list(self.result_list)
                named = people_of(getattr(row, field) or "" for row in rows)
                for row in rows:
                    setattr(row, NAMES_ATTRIBUTE, named[getattr(row, field) or ""])

        return NamedChangeList

    @admin.display(description="person", ordering="principal")
    def principal_person(self, obj: Any) -> str:
        return str(person_of(obj, self.principal_field))


class PrincipalFilter(admin.SimpleListFilter):
    """Filter by person: the principals of the rows the person may see, most frequent first, by name."""

    title = "person"
    parameter_name = "principal"
    limit = 50

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = [
            value
            for value, _ in model_admin.get_queryset(request)
            .exclude(principal="")
            .values_list("principal")
            .annotate(n=Count("pk"))
            .order_by("-n", "principal")[: self.limit]
        ]
        return named_choices(values)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(principal=value)


def named_choices(principals: list[str]) -> list[tuple[str, str]]:
    """Filter choices for ``principals``: each value with its person's name, in the given order."""
    named = people_of(principals)
    return [(principal, str(named[principal])) for principal in principals]
