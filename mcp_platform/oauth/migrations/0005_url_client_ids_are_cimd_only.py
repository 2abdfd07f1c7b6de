"""URL-shaped client ids belong to unbound client metadata document clients alone."""


from django.conf import settings
from django.db import migrations, models
from oauth2_provider.generators import generate_client_id


def free_metadata_document_urls(apps, schema_editor):
    """A client that holds a URL as its id without being the document's unbound client (one an admin typed the
    URL into, or a metadata document client later bound to a tenant) gets a generated id and becomes a manual
    client: it keeps its tenant, tokens and settings, and the URL resolves to its metadata document again."""
    application = apps.get_model("oauth", "TenantApplication")
    offenders = application.objects.filter(client_id__contains=":").exclude(
        registration_source="cimd", tenant__isnull=True
    )
    for client in offenders:
        client.client_id = generate_client_id()
        client.registration_source = "manual"
        client.cimd_expires_at = None
        client.save(update_fields=["client_id", "registration_source", "cimd_expires_at"])


class Migration(migrations.Migration):

    dependencies = [
        ('oauth', '0004_consumed_authorization_codes'),
        ('tenants', '0010_activity_settings'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(free_metadata_document_urls, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='tenantapplication',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('client_id__contains', ':'), _negated=True), models.Q(('registration_source', 'cimd'), ('tenant__isnull', True)), _connector='OR'), name='url_client_ids_are_unbound_cimd_clients'),
        ),
    ]
