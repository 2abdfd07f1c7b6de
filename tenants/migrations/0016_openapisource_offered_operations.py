from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0015_upstream_overrides'),
    ]

    operations = [
        migrations.AddField(
            model_name='openapisource',
            name='offered_operations',
            field=models.JSONField(blank=True, default=None, editable=False, null=True),
        ),
    ]
