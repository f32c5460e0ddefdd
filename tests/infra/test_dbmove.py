"""manage.py move_database: a SQLite install moved into a new PostgreSQL database, every row kept.

The source is a real SQLite file with people, their settings and limits, conversations with
branched message trees, answers with their metrics, presets, API keys, invites, the engine
config, sessions, groups and permissions. The target is a database created on the PostgreSQL
server the suite can reach (the suite's own under `make test-postgres`, else the one at
TEST_POSTGRES_URL, by default postgres://postgres@127.0.0.1:5432/homeai, as for `make
test-postgres`); without one these tests are skipped with the reason.
"""

from __future__ import annotations

import io
import os
from datetime import timedelta
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from django.conf import settings
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.core.management import CommandError, call_command
from django.db import connections
from django.db.models import Max
from django.utils import timezone
from psycopg import sql

from accounts.models import Account, ApiKey, Invite
from documents import fulltext
from inference.models import Conversation, EngineConfig, Generation, Message, Preset
from infra import dbmove
from infra.env import redact_url
from tests.factories import PASSWORD, generation_metrics

SOURCE, TARGET = dbmove.SOURCE, dbmove.TARGET


def _server_url() -> str:
    """A URL of the PostgreSQL server (its database part is replaced)."""
    default = settings.DATABASES["default"]
    if default["ENGINE"] == "django.db.backends.postgresql":
        user, password = default["USER"], default["PASSWORD"]
        auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if password else f"{quote(user, safe='')}@"
        return f"postgres://{auth}{default['HOST'] or '127.0.0.1'}:{default['PORT'] or 5432}/postgres"
    return os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/homeai")


@pytest.fixture
def postgres_url():
    """A new, empty PostgreSQL database for this test, dropped after it."""
    server = _server_url()
    try:
        admin = psycopg.connect(server, dbname="postgres", autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        pytest.skip(
            f"no PostgreSQL at {redact_url(server)} ({str(exc).strip()}): `make test-postgres` starts "
            "one, or set TEST_POSTGRES_URL"
        )
    name = f"test_move_{settings.TEST_RUN_NAME}"[:63]
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with admin:
        admin.execute(drop)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        yield urlsplit(server)._replace(path=f"/{name}").geturl()
        dbmove.disconnect(TARGET)
        admin.execute(drop)


@pytest.fixture(autouse=True)
def moves(django_db_blocker):
    """The test reaches the databases it names itself (not the suite's), and forgets them after."""
    with django_db_blocker.unblock():
        yield
    dbmove.disconnect(SOURCE)
    dbmove.disconnect(TARGET)


@pytest.fixture
def sqlite_url(tmp_path, moves):
    """A migrated SQLite database of its own, connected as dbmove.SOURCE."""
    url = f"sqlite:///{tmp_path / 'homeai.sqlite3'}"
    dbmove.connect(SOURCE, url, "--from")
    call_command("migrate", database=SOURCE, interactive=False, verbosity=0)
    return url


def _fill(db: str) -> dict[str, int]:
    """A household's HomeAI; returns a few ids to check."""
    users = get_user_model().objects.db_manager(db)
    alice = users.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True, first_name="Alice")
    bob = users.create_user("bob", password=PASSWORD)
    gone = users.create_user("gone", password=PASSWORD)
    carol = users.create_user("carol", password=PASSWORD, is_active=False)
    gone.delete()  # ids with a gap, as in a real install

    family = Group.objects.using(db).create(name="family")
    family.permissions.set(Permission.objects.using(db).filter(codename__in=["view_conversation", "add_apikey"]))
    bob.groups.add(family)
    bob.user_permissions.add(Permission.objects.using(db).get(codename="view_generation"))

    Account.objects.using(db).create(
        user=alice, display_name="앨리스 ✨", language="ko", default_preset="precise", answers_per_day=50
    )
    Account.objects.using(db).create(user=bob, tokens_per_day=20000)
    EngineConfig(pk=1, model_name="gemma-3-270m-q4_k_m.gguf", context=8192, threads=4, gpu_layers=-1).save(using=db)
    mine = Preset.objects.using(db).create(user=alice, name="Short", temperature=0.25, top_p=0.9, max_tokens=64)
    Preset.objects.using(db).create(user=alice, name="Pirate", system_prompt="Talk like a pirate.\nAlways.")

    now = timezone.now()
    chat = Conversation.objects.using(db).create(user=alice, title="Trip to Lisbon", temperature=0.3)
    first = Message.objects.using(db).create(conversation=chat, role="user", content="Plan a day in Lisbon")
    answers = [
        Message.objects.using(db).create(conversation=chat, parent=first, role="assistant", content=text)
        for text in ("Start at Belém…", "Take tram 28 first.")  # the second: a regenerated sibling
    ]
    follow = Message.objects.using(db).create(conversation=chat, parent=answers[1], role="user", content="And dinner?")
    last = Message.objects.using(db).create(conversation=chat, parent=follow, role="assistant", content="Alfama.")
    edited = Message.objects.using(db).create(conversation=chat, role="user", content="Plan two days in Lisbon")
    Conversation.objects.using(db).filter(id=chat.id).update(current_leaf=last)
    for index, message in enumerate([*answers, last]):
        metrics = generation_metrics(token_texts=["Al", "fa", "ma", ".", "", "", "", ""], finished_at=now)
        Generation.objects.using(db).create(
            user=alice,
            conversation=chat,
            message=message,
            max_tokens=64,
            t_arrive_ns=1_700_000_000_123_456_789 + index,
            sampling={"temperature": 0.3, "stop": ["\n\n"], "seed": 7},
            output={"schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
            system_prompt="Be brief.",
            **metrics,
        )
    waiting = Message.objects.using(db).create(conversation=chat, parent=edited, role="assistant")
    Generation.objects.using(db).create(
        user=alice, conversation=chat, message=waiting, max_tokens=64, t_arrive_ns=1_700_000_001_000_000_000
    )
    scrap = Conversation.objects.using(db).create(user=bob, title="deleted later")
    api = Conversation.objects.using(db).create(user=bob, title="curl", source="api", max_tokens=32)
    scrap.delete()
    question = Message.objects.using(db).create(conversation=api, role="user", content="ping")
    reply = Message.objects.using(db).create(conversation=api, parent=question, role="assistant", content="pong")
    Generation.objects.using(db).create(
        user=bob,
        conversation=api,
        message=reply,
        client="openai-python",
        raw_prompt=True,
        max_tokens=32,
        t_arrive_ns=1_700_000_002_000_000_000,
        status="error",
        error_code="model_failed",
        error_message="The model could not load: «out of memory».",
    )

    ApiKey.objects.using(db).create(user=bob, name="laptop", prefix="hai_AbCd", key_hash="a" * 64, last_used_at=now)
    ApiKey.objects.using(db).create(user=bob, name="old", prefix="hai_EfGh", key_hash="b" * 64, revoked_at=now)
    Invite.objects.using(db).create(
        created_by=alice, note="for Carol", expires_at=now + timedelta(days=3), used_at=now, used_by=carol
    )
    Invite.objects.using(db).create(created_by=None, is_staff=True, expires_at=now + timedelta(days=7))
    Session.objects.using(db).create(session_key="k" * 32, session_data="e30:signed", expire_date=now)
    LogEntry.objects.using(db).create(
        user=alice,
        content_type=ContentType.objects.db_manager(db).get_for_model(Preset),
        object_id=str(mine.id),
        object_repr="Short",
        action_flag=ADDITION,
        change_message="[]",
    )
    return {"conversation": chat.id, "leaf": last.id}


def _rows(model, db: str) -> list[tuple]:
    fields = [field.attname for field in model._meta.local_concrete_fields]
    return list(model._base_manager.using(db).order_by("pk").values_list(*fields))


def test_a_sqlite_install_moves_to_postgresql_with_every_row(sqlite_url, postgres_url):
    ids = _fill(SOURCE)
    out = io.StringIO()
    call_command("move_database", "--from", sqlite_url, "--to", postgres_url, stdout=out)
    assert "Moved " in out.getvalue(), out.getvalue()
    target = connections[TARGET]
    assert target.vendor == "postgresql"

    # Every table Django keeps is moved (none is missing from the copy's list), row for row.
    # SQLite's full-text index of the documents' chunks (FTS5 and its shadow tables) is no model:
    # its triggers fill it from documents_chunk wherever rows go, and PostgreSQL indexes the column.
    source_tables = {
        name
        for name in connections[SOURCE].introspection.table_names()
        if name != "django_migrations" and not name.startswith(fulltext.FTS_TABLE)
    }
    assert source_tables == {model._meta.db_table for model in dbmove.tables()}
    for model in dbmove.tables():
        rows = _rows(model, SOURCE)
        assert _rows(model, TARGET) == rows, model._meta.db_table
    for model in (get_user_model(), Account, Conversation, Message, Generation, ApiKey, Preset, Invite, EngineConfig):
        assert model._base_manager.using(TARGET).exists(), f"the source has no {model.__name__} rows to move"

    # What the app reads through those rows still holds together on the target.
    chat = Conversation.objects.using(TARGET).get(id=ids["conversation"])
    assert chat.current_leaf_id == ids["leaf"]
    assert Message.objects.using(TARGET).filter(conversation=chat, parent__isnull=True).count() == 2
    granted = Permission.objects.using(TARGET).filter(group__user__username="bob")
    assert set(granted.values_list("codename", flat=True)) == {"view_conversation", "add_apikey"}
    assert get_user_model().objects.using(TARGET).get(username="alice").check_password(PASSWORD)

    # Every id sequence continues past the moved ids: the next row of each table gets a fresh id.
    with target.cursor() as cursor:
        for model in dbmove.tables():
            pk = model._meta.pk
            if pk.get_internal_type() not in ("AutoField", "BigAutoField", "SmallAutoField"):
                continue
            table, column = model._meta.db_table, pk.column
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s))", [table, column])
            highest = model._base_manager.using(TARGET).aggregate(top=Max("pk"))["top"] or 0
            assert cursor.fetchone()[0] > highest, table
    newcomer = get_user_model().objects.db_manager(TARGET).create_user("dave", password=PASSWORD)
    Conversation.objects.using(TARGET).create(user=newcomer, title="first chat")
    assert newcomer.id > get_user_model().objects.using(SOURCE).aggregate(top=Max("id"))["top"]

    # A second move into the now filled database is refused, and changes nothing there.
    before = {model: _rows(model, TARGET) for model in dbmove.tables()}
    with pytest.raises(CommandError, match="already holds data"):
        call_command("move_database", "--from", sqlite_url, "--to", postgres_url, stdout=io.StringIO())
    assert {model: _rows(model, TARGET) for model in dbmove.tables()} == before


def test_a_move_that_fails_writes_nothing(sqlite_url, postgres_url):
    """Rows that do not hold together (an answer of a person who is gone, written while SQLite's
    foreign keys were off) stop the move with the reason; the target keeps no row of it."""
    _fill(SOURCE)
    with connections[SOURCE].cursor() as cursor:
        cursor.execute("PRAGMA foreign_keys = OFF")
        cursor.execute("UPDATE accounts_apikey SET user_id = 999 WHERE name = 'old'")
        cursor.execute("PRAGMA foreign_keys = ON")
    with pytest.raises(CommandError, match="do not hold together"):
        call_command("move_database", "--from", sqlite_url, "--to", postgres_url, stdout=io.StringIO())
    for model in dbmove.tables():
        if model._meta.label_lower not in dbmove.FILLED_BY_MIGRATE:
            assert not model._base_manager.using(TARGET).exists(), model._meta.db_table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Name the new database with --to URL"),
        (["--from", "sqlite:////nonexistent/homeai.sqlite3", "--to", "sqlite:////tmp/x"], "no SQLite database at"),
        (["--to", "mysql://homeai@nas/homeai"], "HomeAI runs on SQLite"),
        (["--to", "postgres//nas/homeai"], "--to='postgres//nas/homeai': HomeAI runs on SQLite"),
    ],
)
def test_bad_requests_are_refused_with_the_reason(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("move_database", *args, stdout=io.StringIO())


def test_the_source_and_target_must_differ(sqlite_url):
    with pytest.raises(CommandError, match="are the same database"):
        call_command("move_database", "--from", sqlite_url, "--to", sqlite_url, stdout=io.StringIO())


def test_an_unmigrated_source_is_refused(tmp_path):
    source = tmp_path / "old.sqlite3"
    source.touch()
    with pytest.raises(CommandError, match="run `manage.py migrate` on it first"):
        call_command("move_database", "--from", f"sqlite:///{source}", "--to", f"sqlite:///{tmp_path / 'new'}")


def test_passwords_stay_out_of_messages():
    assert redact_url("postgres://homeai:s3cret@nas:5432/homeai") == "postgres://homeai:***@nas:5432/homeai"
    assert redact_url("sqlite:////data/homeai.sqlite3") == "sqlite:////data/homeai.sqlite3"
