"""django-oauth-toolkit glue: the tenant-bound client model, protected-resource checks, consent pages."""
