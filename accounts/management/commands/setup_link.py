"""python manage.py setup_link: print the first-run setup link while no account exists."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts import setup_token


class Command(BaseCommand):
    help = "Print the one-time link that creates the admin account (only while no account exists)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            default=settings.HOMEAI_PUBLIC_URL or "http://localhost:8000",
            help="the address people open (default: HOMEAI_PUBLIC_URL)",
        )

    def handle(self, *args, **opts):
        if get_user_model().objects.exists():
            return
        link = f"{opts['base_url'].rstrip('/')}/setup/?token={setup_token.token()}"
        self.stdout.write(f"First run: create the admin account at {link}")
