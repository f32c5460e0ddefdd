from django.db import migrations

from documents import fulltext


class Migration(migrations.Migration):
    """The fts5vocab table's counts read a common word's whole list of chunks; a query's words
    are now counted through the index, each count stopped at the threshold (fulltext.py)."""

    dependencies = [
        ("documents", "0002_fulltext_vocab"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: fulltext.teardown_vocab(schema_editor),
            lambda apps, schema_editor: fulltext.setup_vocab(schema_editor),
        ),
    ]
