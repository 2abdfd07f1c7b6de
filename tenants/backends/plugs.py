"""The backend registry: the one place that lists the backends, mapping each ``Backend`` choice to its
implementation (a ``tenants.backends.base.CatalogBackend``). The dispatcher (``tenants.backends``), the validation
and the admin find a backend here and nowhere else.

(The Python *function* registry, which Python tools bind by name, is ``tenants.backends.registry``.)
"""

from __future__ import annotations

from django.utils.module_loading import import_string

from tenants.backends.base import CatalogBackend
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tool

# The one list of the backends: each ``Backend`` choice and the class that implements it. The classes are loaded at
# start-up (``backends_load``, from ``TenantsConfig.ready``), not imported here: the upstream backend lives with the
# federation, which writes mirrored catalogs through the services, whose validation consults this registry.
PLUGS: dict[str, str] = {
    Backend.STATIC: "tenants.backends.static.StaticBackend",
    Backend.PYTHON: "tenants.backends.python.PythonBackend",
    Backend.UPSTREAM: "tenants.federation.backend.UpstreamBackend",
    Backend.HTTP: "tenants.backends.http.HttpBackend",
}
BACKENDS: dict[str, CatalogBackend] = {}


def backends_load() -> None:
    """Make one instance of every backend in ``PLUGS`` (once per process, at start-up)."""
    if BACKENDS:
        return
    for choice, path in PLUGS.items():
        backend = import_string(path)()
        if backend.choice != choice:
            raise ImportError(f"{path} implements the {backend.choice!r} backend, registered as {choice!r}")
        BACKENDS[choice] = backend


class UnknownBackend(ValueError):
    """A stored entry names a backend no module implements (a row written before a backend was removed)."""


def backend_of(entry: Tool | ResourceTemplate | Prompt) -> CatalogBackend:
    """The backend that serves ``entry``. Raises ``UnknownBackend``."""
    try:
        return BACKENDS[entry.backend]
    except KeyError:
        raise unknown_backend(entry) from None


def unknown_backend(entry: Tool | ResourceTemplate | Prompt) -> UnknownBackend:
    return UnknownBackend(f"{entry._meta.verbose_name} {entry.name!r} has unknown backend {entry.backend!r}")


def resource_backend(resource: Resource) -> CatalogBackend:
    """A resource row has no backend column: one mirrored from an upstream is read there, any other is stored."""
    return BACKENDS[Backend.UPSTREAM if resource.upstream_id is not None else Backend.STATIC]


def backends_chosen_by_hand() -> frozenset[str]:
    """The ``Backend`` choices a person may pick on the admin's forms (``CatalogBackend.chosen_by_hand``)."""
    backends_load()
    return frozenset(choice for choice, backend in BACKENDS.items() if backend.chosen_by_hand)


def admin_forms() -> list[type]:
    """The model-form mixins of the backends that have one (``CatalogBackend.admin_form``), in registry order. The
    admin's tool, template and prompt forms include each of them."""
    backends_load()  # the admin is imported before the tenants app is ready
    paths = [backend.admin_form for backend in BACKENDS.values() if backend.admin_form is not None]
    return [import_string(path) for named in paths for path in ((named,) if isinstance(named, str) else named)]
