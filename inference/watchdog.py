"""Web-side sweep that turns a dead worker's running answers into 'interrupted' within seconds."""

from __future__ import annotations

import asyncio
import logging

from django.conf import settings

from inference.outage import OutageLog
from inference.services import sweeps
from infra.dbthreads import kept_db

log = logging.getLogger(__name__)

_task: asyncio.Task | None = None


async def _sweep_forever() -> None:
    interval = max(settings.HOMEAI_WORKER_TTL / 4, 0.5)
    memory = sweeps.SweepMemory()
    outage = OutageLog(log, "the answer sweep")
    while True:
        try:
            await kept_db(sweeps.sweep)(memory)
        except Exception:
            outage.failed(f"trying again every {interval:.1f} s")
        else:
            outage.ok()
        await asyncio.sleep(interval)


def ensure_running() -> None:
    """Start the sweep on this process's event loop once (called from socket connects)."""
    global _task
    if _task is None or _task.done():
        _task = asyncio.get_running_loop().create_task(_sweep_forever())
