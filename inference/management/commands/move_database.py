"""python manage.py move_database --to URL and/or --from URL: every row into a new database."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from infra import dbmove


class Command(BaseCommand):
    help = (
        "Copy every row of HomeAI's database into a new, empty one (SQLite to PostgreSQL, say), ids "
        "kept, and move the new database's id sequences past them. A side not named with --to or "
        "--from is the app's own database (DATABASE_URL). Stop web and worker first. "
        "The source is only read: keep it as a backup."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", metavar="URL", help="the new database, e.g. postgres://homeai:PASSWORD@host/homeai")
        parser.add_argument(
            "--from", dest="source", metavar="URL", help="the old one, e.g. sqlite:////data/homeai.sqlite3"
        )

    def handle(self, *args, **opts):
        if not opts["source"] and not opts["to"]:
            raise CommandError("Name the new database with --to URL, or the old one with --from URL.")
        try:
            source = dbmove.connect(dbmove.SOURCE, opts["source"], "--from")
            target = dbmove.connect(dbmove.TARGET, opts["to"], "--to")
            self.stdout.write(f"Moving {dbmove.describe(source)} to {dbmove.describe(target)}")
            moved = dbmove.move(source, target, progress=lambda m: self.stdout.write(f"  {m.table}: {m.rows} rows"))
        except dbmove.MoveError as exc:
            raise CommandError(str(exc)) from None
        total = sum(entry.rows for entry in moved)
        self.stdout.write(
            self.style.SUCCESS(f"Moved {total} rows in {len(moved)} tables to {dbmove.describe(target)}.")
        )
