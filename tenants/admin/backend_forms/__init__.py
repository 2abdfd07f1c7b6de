"""The catalog form's backend sections: each backend plug names its sections (``CatalogBackend.admin_form``),
model-form mixins that edit the entry's ``config`` as plain fields and keep in the "Advanced (JSON)" box only what
those fields cannot express. ``base`` holds what the sections share; ``static`` (a tool's content blocks, from
``blocks``, and a template's text) and ``http`` are sections (the Python one is ``tenants.admin.python_functions``);
``widgets`` holds the rows that edit a list."""
