"""Pages other apps add to an admin of this package. An app above ``tenants`` (the tool console, the configuration
files) adds its pages at its ``ready()``: the admin class serves their URLs and links them from an object's page,
so each model is registered once, here, and the admin knows none of the apps that extend it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.urls import URLPattern, URLResolver, reverse

UrlList = list[URLPattern | URLResolver]


@dataclass(frozen=True)
class ObjectPage:
    """A page on one object of a model admin.

    ``urls`` builds the page's URL patterns for the model admin that serves them (its views check access through
    that admin); ``url_name`` names the pattern the object's change page links to, with ``label``, for people who
    may change the object.
    """

    label: str
    url_name: str
    urls: Callable[[admin.ModelAdmin[Any]], UrlList]


class ObjectPages:
    """The pages added to one model admin, in the order they were added; adding a page again replaces it."""

    def __init__(self) -> None:
        self._pages: dict[str, ObjectPage] = {}

    def add(self, page: ObjectPage) -> None:
        self._pages[page.url_name] = page

    def urls(self, model_admin: admin.ModelAdmin[Any]) -> UrlList:
        return [url for page in self._pages.values() for url in page.urls(model_admin)]

    def links(self, obj: Model) -> list[tuple[str, str]]:
        """(label, address) of each page of ``obj``."""
        return [(page.label, reverse(f"admin:{page.url_name}", args=[obj.pk])) for page in self._pages.values()]


# The tool admin's pages (the console's run page and the endpoints it posts to).
tool_pages = ObjectPages()
# The tenant admin's pages (the configuration file's export and import).
tenant_pages = ObjectPages()
