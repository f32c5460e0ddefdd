"""Test settings: the app's own settings, pointed at a test data dir, Redis DB and queue.

A separate Celery queue, channel prefix and Redis database keep the suite from trading tasks
or events with a HomeAI instance running on the same machine.
"""

import os
import re
from pathlib import Path

_BASE = Path(__file__).resolve().parent.parent
os.environ.setdefault("HOMEAI_DATA_DIR", str(_BASE / "data" / "test"))
# Its own models folder (the model-library tests add files); conftest links the bundled model in.
os.environ.setdefault("HOMEAI_MODELS_DIR", str(_BASE / "data" / "test" / "models"))
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("HOMEAI_QUEUE", "homeai-test")
os.environ.setdefault("HOMEAI_CHANNEL_PREFIX", "homeai-test")
os.environ.setdefault("HOMEAI_WORKER_TTL", "3")
os.environ.setdefault("HOMEAI_RESEND_AFTER_S", "5")
os.environ.setdefault("HOMEAI_TOOL_TIMEOUT_S", "4")  # a hanging tool server ends its card soon
os.environ.setdefault("HOMEAI_METRICS_TOKEN", "test-metrics-token")

from homeai.settings import *  # noqa: E402,F403
from homeai.settings import DATABASES  # noqa: E402

# PostgreSQL databases the suite creates are named after the run's own queue: two runs on one
# server (another checkout, CI beside a developer) never create, flush or drop each other's.
TEST_RUN_NAME = re.sub(r"[^a-z0-9]+", "_", os.environ["HOMEAI_QUEUE"].lower()).strip("_")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{TEST_RUN_NAME}"[:63]}

# Processes started by the tests (daphne, the Celery worker) use the test database itself.
if os.environ.get("HOMEAI_USE_TEST_DB") == "1":
    DATABASES["default"]["NAME"] = DATABASES["default"]["TEST"]["NAME"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
