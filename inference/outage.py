"""A log line when something starts failing and one when it works again, not one per attempt:
loops that retry through a Redis outage (the heartbeat, the event pump, the watchdog) would
otherwise write a traceback every quarter second for as long as it lasts."""

from __future__ import annotations

import logging


class OutageLog:
    def __init__(self, logger: logging.Logger, what: str):
        self.logger = logger
        self.what = what
        self.failing = False

    def failed(self, detail: str = "") -> None:
        """Call from an except block: the first failure is logged, with its traceback."""
        if not self.failing:
            self.logger.warning("%s failed%s", self.what, f"; {detail}" if detail else "", exc_info=True)
        self.failing = True

    def ok(self) -> None:
        if self.failing:
            self.logger.warning("%s works again", self.what)
        self.failing = False
