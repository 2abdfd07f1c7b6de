"""The catalog form's backend sections: each backend plug names its section (``CatalogBackend.admin_form``), a
model-form mixin that edits the entry's ``config`` as plain fields and keeps in the "Advanced (JSON)" box only what
those fields cannot express. ``base`` holds what the sections share; ``static`` and ``http`` are two sections (the
Python one is ``tenants.admin.python_functions``)."""
