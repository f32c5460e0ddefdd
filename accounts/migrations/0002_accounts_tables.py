"""The moved tables take this app's names (inference_account -> accounts_account, ...), and the
content types (and with them staff's permissions and the admin's history) follow the models."""

from django.db import migrations

MODELS = ("account", "invite", "apikey")


def _relabel(apps, schema_editor, source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        if content_type.objects.using(db).filter(app_label=target, model=model).exists():
            continue  # made by a migrate that already ran post_migrate for this app
        content_type.objects.using(db).filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor):
    _relabel(apps, schema_editor, "inference", "accounts")


def backwards(apps, schema_editor):
    _relabel(apps, schema_editor, "accounts", "inference")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("inference", "0013_accounts_move_out"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelTable(name="apikey", table=None),
        migrations.AlterModelTable(name="account", table=None),
        migrations.AlterModelTable(name="invite", table=None),
        migrations.RunPython(forwards, backwards),
    ]
