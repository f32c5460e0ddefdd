"""Account, Invite and ApiKey moved from the inference app to accounts: a database migrated
before the move keeps every row, under the new tables' names, and its content types (staff's
permissions, the admin's history) follow the models. Runs on SQLite and, in make test-postgres,
on PostgreSQL."""

from __future__ import annotations

import datetime

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import Account, ApiKey, Invite

BEFORE = [("inference", "0012_embedding_batches"), ("accounts", None)]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] in ("inference", "accounts")]


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_every_account_row_and_content_type():
    _migrate(BEFORE)
    try:
        old = MigrationExecutor(connection).loader.project_state(BEFORE[0]).apps
        user = get_user_model().objects.create(username="ana", password="x")
        expires = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
        old.get_model("inference", "Account").objects.create(user_id=user.id, display_name="Ana", tokens_per_day=500)
        old.get_model("inference", "Invite").objects.create(created_by_id=user.id, note="for Bo", expires_at=expires)
        old.get_model("inference", "ApiKey").objects.create(
            user_id=user.id, name="laptop", prefix="hai_1234", key_hash="f" * 64
        )
        ContentType.objects.filter(app_label="accounts").delete()  # as a database from before had none
        for model in ("account", "invite", "apikey"):
            ContentType.objects.get_or_create(app_label="inference", model=model)
        moved = {ct.model: ct.id for ct in ContentType.objects.filter(app_label="inference")}
        ContentType.objects.clear_cache()
    finally:
        _migrate(_latest())

    ContentType.objects.clear_cache()
    ana = get_user_model().objects.get(username="ana")
    account = Account.objects.get()
    assert (account.user_id, account.display_name, account.tokens_per_day) == (ana.id, "Ana", 500)
    invite = Invite.objects.get()
    assert (invite.created_by_id, invite.note, invite.expires_at.year) == (ana.id, "for Bo", 2030)
    key = ApiKey.objects.get()
    assert (key.user_id, key.name, key.prefix, key.key_hash) == (ana.id, "laptop", "hai_1234", "f" * 64)
    assert Account._meta.db_table == "accounts_account" and "accounts_apikey" in connection.introspection.table_names()
    assert "inference_apikey" not in connection.introspection.table_names()
    # The content types are the same rows, relabelled: permissions granted on them still hold.
    assert ContentType.objects.get_for_model(ApiKey).id == moved["apikey"]
    assert ContentType.objects.get_for_model(Account).id == moved["account"]
    assert not ContentType.objects.filter(app_label="inference", model__in=("account", "invite", "apikey")).exists()
