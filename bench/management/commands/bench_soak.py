"""python manage.py bench_soak: people chatting and an API client through a HomeAI of its own for
minutes, with a Redis restart and a worker SIGKILL inside the window (bench/soak.py); with
--household, the people alone, without faults, answers of 48 tokens."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from bench.soak import markdown, run, write


class Command(BaseCommand):
    help = "Soak: simulated chats plus an API client, a Redis restart and a worker kill; every answer must end."

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, default=10)
        parser.add_argument("--users", type=int, default=8)
        parser.add_argument("--redis-restart-at", type=float, default=None, help="seconds into the window (30%%)")
        parser.add_argument("--worker-kill-at", type=float, default=None, help="seconds into the window (60%%)")
        parser.add_argument(
            "--household",
            action="store_true",
            help="people alone, no faults and no API client, 48-token answers (writes household.json)",
        )
        parser.add_argument("--out", default="docs/bench", help="folder for soak.json")

    def handle(self, *args, **opts):
        result = run(
            minutes=opts["minutes"],
            users=opts["users"],
            redis_restart_at=opts["redis_restart_at"],
            worker_kill_at=opts["worker_kill_at"],
            household=opts["household"],
            log=lambda msg: self.stderr.write(msg),
        )
        path = write(result, Path(opts["out"]), "household.json" if opts["household"] else "soak.json")
        self.stdout.write(json.dumps({k: v for k, v in result.items() if k != "per_minute"}, indent=2))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
