"""Moving HomeAI to another database (SQLite to PostgreSQL, say) with every row kept.

`manage.py move_database --to URL` (or `--from URL`: the other side is the app's DATABASE_URL)
migrates the target, then copies every table's rows with their ids, in one transaction on the
target, and moves the target's id sequences past the copied ids, so the next row gets a fresh
one. The source is only read. The target must be new: it may hold only what `migrate` writes
(content types and permissions), which the source's own rows replace, so every reference to
them keeps pointing at the same row.

Values travel as Python values: read through each field (a datetime, a JSON document, a
boolean), written through the target's own conversion, with no model `save()` in between, so
`auto_now` timestamps and every other column arrive as they left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Model

from infra.env import DATABASE_ENGINES, SQLITE_ENGINE, database_config

SOURCE, TARGET = "move-source", "move-target"
BATCH = 500


class MoveError(Exception):
    """Why the move did not start or did not finish, in words a person can act on."""


@dataclass(frozen=True)
class Moved:
    table: str
    rows: int


def connect(alias: str, url: str | None, option: str) -> str:
    """The alias of the database at url, added to Django's connections (None: the app's own);
    option names url in an error."""
    if not url:
        return DEFAULT_DB_ALIAS
    disconnect(alias)
    try:
        config = database_config(url, name=option)
    except ImproperlyConfigured as exc:
        raise MoveError(str(exc)) from None
    connections.settings[alias] = connections.configure_settings({DEFAULT_DB_ALIAS: config})[DEFAULT_DB_ALIAS]
    return alias


def disconnect(alias: str) -> None:
    """Close and forget a database connect() added."""
    if alias in connections.settings and alias != DEFAULT_DB_ALIAS:
        connections[alias].close()
        del connections[alias]
        del connections.settings[alias]


def describe(alias: str) -> str:
    """A database as a person recognises it, without its password."""
    config = connections[alias].settings_dict
    engine = DATABASE_ENGINES.get(config["ENGINE"], config["ENGINE"])
    if config["ENGINE"] == SQLITE_ENGINE:
        return f"{engine} {config['NAME']}"
    return f"{engine} {config['NAME']} on {config['HOST'] or 'localhost'}:{config['PORT'] or 5432}"


def tables() -> list[type[Model]]:
    """Every table Django keeps (many-to-many tables included), each once."""
    return [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy and not model._meta.swapped
    ]


# What `migrate` itself writes into a new database; the source's rows replace them.
FILLED_BY_MIGRATE = ("auth.permission", "contenttypes.contenttype")


def _same_database(a: str, b: str) -> bool:
    keys = ("ENGINE", "NAME", "HOST", "PORT")
    one, other = connections[a].settings_dict, connections[b].settings_dict
    return all(str(one[key]) == str(other[key]) for key in keys)


def check_source(alias: str) -> None:
    config = connections[alias].settings_dict
    if config["ENGINE"] == SQLITE_ENGINE and not os.path.isfile(config["NAME"]):
        raise MoveError(f"There is no SQLite database at {config['NAME']}.")
    try:
        executor = MigrationExecutor(connections[alias])
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise MoveError(f"Cannot read {describe(alias)}: {exc}") from None
    if pending:
        raise MoveError(
            f"{describe(alias)} lacks {len(pending)} migration(s) of this version of HomeAI: run "
            "`manage.py migrate` on it first (the web container does at start), then move it."
        )


def prepare_target(alias: str) -> None:
    try:
        call_command("migrate", database=alias, interactive=False, verbosity=0)
    except DatabaseError as exc:
        raise MoveError(f"Cannot prepare {describe(alias)}: {exc}") from None
    held = [
        f"{model._meta.db_table} ({count} rows)"
        for model in tables()
        if model._meta.label_lower not in FILLED_BY_MIGRATE and (count := model._base_manager.using(alias).count())
    ]
    if held:
        raise MoveError(
            f"{describe(alias)} already holds data: {', '.join(held)}. Move into a new, empty database "
            "(HomeAI's rows are never merged into another's)."
        )


def _batches(model: type[Model], alias: str) -> Iterator[list[tuple]]:
    """The table's rows, by id, BATCH at a time."""
    fields = [field.attname for field in model._meta.local_concrete_fields]
    rows = model._base_manager.using(alias).order_by("pk").values_list(*fields).iterator(chunk_size=BATCH)
    while batch := list(islice(rows, BATCH)):
        yield batch


def copy_table(model: type[Model], source: str, target: str) -> int:
    """Insert the source's rows of model's table into the target's, ids and all."""
    connection = connections[target]
    fields = model._meta.local_concrete_fields
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})"
    count = 0
    with connection.cursor() as cursor:
        for batch in _batches(model, source):
            params = [
                [field.get_db_prep_save(value, connection=connection) for field, value in zip(fields, row, strict=True)]
                for row in batch
            ]
            cursor.executemany(sql, params)
            count += len(batch)
    return count


def move(source: str, target: str, progress: Callable[[Moved], None] = lambda moved: None) -> list[Moved]:
    """Copy every row of source into target (a new database); returns each table's row count."""
    if _same_database(source, target):
        raise MoveError(f"The source and the target are the same database ({describe(source)}).")
    check_source(source)
    prepare_target(target)
    models = tables()
    moved = []
    connection = connections[target]
    with transaction.atomic(using=source), transaction.atomic(using=target):
        for label in FILLED_BY_MIGRATE:
            apps.get_model(label)._base_manager.using(target).all().delete()
        with connection.constraint_checks_disabled():
            for model in models:
                moved.append(Moved(model._meta.db_table, copy_table(model, source, target)))
                progress(moved[-1])
        try:
            connection.check_constraints(table_names=[model._meta.db_table for model in models])
        except DatabaseError as exc:
            raise MoveError(f"The copied rows do not hold together ({exc}); nothing was written.") from None
        with connection.cursor() as cursor:
            for statement in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(statement)
    for model, entry in zip(models, moved, strict=True):
        if model._base_manager.using(target).count() != entry.rows:
            raise MoveError(f"{entry.table}: {entry.rows} rows copied, but the target counts otherwise.")
    return moved
