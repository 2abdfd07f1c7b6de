from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0012_upstream_list_cache_hints'),
    ]

    operations = [
        migrations.AddField(
            model_name='upstream',
            name='overrides',
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
    ]
