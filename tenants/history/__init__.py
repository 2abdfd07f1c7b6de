"""The history of what people change in a tenant's catalog, sources, limits and settings, with rollback.

django-reversion keeps the versions (one table) and groups every row one change touched into a revision, so a change
is restored in one action. What is versioned, and how a version goes back through the services, is declared per
model (``versioned.py``: one ``Versioned`` line each). What this package offers the rest of the house:
``revisions.catalog_revision`` (one revision around writes, with who and why), ``revisions.history_note`` (what a
service did, for the revision's comment), ``selectors`` (an object's versions, deleted rows), ``diff`` (field by
field), ``restore.version_restore`` (a version back through the services, itself a new version).
"""
