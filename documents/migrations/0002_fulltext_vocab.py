from django.db import migrations

from documents import fulltext


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: fulltext.setup_vocab(schema_editor),
            lambda apps, schema_editor: fulltext.teardown_vocab(schema_editor),
        ),
    ]
