from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0014_labels'),
    ]

    operations = [
        migrations.AddField(
            model_name='upstream',
            name='overrides',
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
    ]
