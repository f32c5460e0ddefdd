"""python manage.py create_api_key <username> [--name N]: print a new API key (for scripts and tests)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.keys import api_key_create
from infra.errors import ClientError


class Command(BaseCommand):
    help = "Create an API key for a user and print it (only the key, on stdout); it is shown once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="Command line", help="a label for the key on the API keys page")

    def handle(self, *args, **opts):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: opts["username"]})
        except User.DoesNotExist:
            raise CommandError(f"There is no user named {opts['username']!r}.") from None
        if not user.is_active:
            raise CommandError(f"The account {opts['username']!r} is deactivated; its keys would not work.")
        try:
            _key, raw = api_key_create(user=user, name=opts["name"])
        except ClientError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(raw)
