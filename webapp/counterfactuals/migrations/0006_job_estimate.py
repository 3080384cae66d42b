from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0005_job_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="counterfactualjob",
            name="estimate",
            field=models.JSONField(blank=True, default=dict, help_text="the cost estimate the job was confirmed with"),
        ),
    ]
