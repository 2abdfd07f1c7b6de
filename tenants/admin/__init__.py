"""The tenant-scoped admin. Importing the package registers its admin classes."""

from tenants.admin import catalog  # noqa: F401
