"""Account, Invite and ApiKey now belong to the accounts app (its 0001 takes them over, rows and
tables as they are): only Django's state forgets them here, the database keeps everything."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0012_embedding_batches"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Account"),
                migrations.DeleteModel(name="Invite"),
            ],
            database_operations=[],
        ),
    ]
