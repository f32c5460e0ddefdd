"""Conversations, their messages, and one Generation (with its measured phases) per answer."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import pgettext_lazy

from inference.engine.speculation import speculation_rates
from inference.engine.timing import phase_ms


class EngineConfig(models.Model):
    """The model the workers run and its runtime settings, chosen in the model library.

    One row. Empty fields fall back to the environment (HOMEAI_MODEL_PATH, HOMEAI_CONTEXT,
    HOMEAI_THREADS, HOMEAI_GPU_LAYERS).
    """

    model_name = models.CharField(max_length=255, blank=True)  # a file name in the models directory
    context = models.PositiveIntegerField(null=True, blank=True)
    threads = models.PositiveIntegerField(null=True, blank=True)
    gpu_layers = models.IntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.model_name or "defaults from the environment"

    @classmethod
    def current(cls) -> EngineConfig:
        return cls.objects.get_or_create(pk=1)[0]

    @property
    def version(self) -> str:
        return self.updated_at.isoformat()


class ChatSettings(models.Model):
    """Settings for the answers a chat writes: empty or null means the server's default."""

    FIELDS = ("model", "system_prompt", "temperature", "top_p", "max_tokens")
    SAMPLING_FIELDS = ("temperature", "top_p")

    model = models.CharField(max_length=255, blank=True)  # a model's file name; empty: the server's default
    system_prompt = models.TextField(blank=True)  # becomes the prompt's first message (role "system")
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        abstract = True

    def settings(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def sampling(self) -> dict:
        """The sampling overrides these settings make (for Generation.sampling)."""
        return {name: getattr(self, name) for name in self.SAMPLING_FIELDS if getattr(self, name) is not None}


class Conversation(ChatSettings):
    class Source(models.TextChoices):
        CHAT = "chat"  # the chat page
        API = "api"  # an OpenAI-compatible client; kept out of the chat sidebar

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=120)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.CHAT)
    # The branch on show: the path from a root message down to this one (null: the newest message).
    current_leaf = models.ForeignKey("Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The document collections its answers are drawn from ("#" in the composer), and the chat's
    # own private collection of the files attached to it (made with the first file).
    collections = models.ManyToManyField("documents.Collection", blank=True, related_name="+")
    files_collection = models.ForeignKey(
        "documents.Collection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The tools (their keys, inference/tools/catalog.py) this chat turned off, over the person's own choice.
    tools_off = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class Message(models.Model):
    """One turn. Messages form a tree: alternatives (a regenerated answer, an edited message)
    are siblings, children of the same parent; a root (the first message) has no parent."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    # Files attached with this message (the chat's files collection): [{"name"}], its chips.
    attachments = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class Generation(models.Model):
    """One answer being produced: its state, its parameters and every measured phase."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"
        ERROR = "error"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="generations")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="generations")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="generation")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    client = models.CharField(max_length=32, default="chat")  # "chat", or the API client's name
    # /v1/completions: the last user message is the prompt itself, no chat template.
    raw_prompt = models.BooleanField(default=False)
    # Asked of the keyless Ollama API without a key (any LAN client): its cached prefixes are
    # kept apart from the account's own (stream.cache_owner).
    keyless = models.BooleanField(default=False)
    # What the answer must be beyond free text: JSON matching a schema, or tool calls
    # (inference.engine.tools.OutputSpec); the worker builds a grammar from it.
    output = models.JSONField(default=dict, blank=True)
    model_name = models.CharField(max_length=255, blank=True)  # the model file it was asked of (and routed by)
    # How long the worker keeps the model loaded after this answer (Ollama's keep_alive), in
    # seconds; negative: until evicted; null: the server's default (HOMEAI_KEEP_ALIVE).
    keep_alive_s = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField()
    # Per-request sampling overrides (temperature, top_p, top_k, min_p, repeat_penalty, seed, stop).
    sampling = models.JSONField(default=dict, blank=True)
    # The conversation's system prompt when the answer was asked for (the prompt's first message).
    system_prompt = models.TextField(blank=True)
    # Wall clock (ns since the epoch) when the web process accepted the request: the one
    # timestamp taken outside the worker, so queue time spans both processes' clocks.
    t_arrive_ns = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)  # workers that claimed it (a dead one's is retried once)
    finish_reason = models.CharField(max_length=16, blank=True)
    error_code = models.CharField(max_length=32, blank=True)
    error_message = models.TextField(blank=True)
    notice = models.TextField(blank=True)
    # The document collections its retrieve phase searches (ids; each checked readable by its
    # person again on the worker), and the chunks it found: the answer's numbered sources
    # ([{n, collection, document, path, page, section, text, file}]).
    collections = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)

    # Phases in milliseconds; queue + retrieve + load + prefill + first_token + decode == e2e.
    queue_ms = models.FloatField(null=True)
    retrieve_ms = models.FloatField(null=True)  # the query's embedding and the search (chats with collections)
    load_ms = models.FloatField(null=True)
    prefill_ms = models.FloatField(null=True)
    first_token_ms = models.FloatField(null=True)
    decode_ms = models.FloatField(null=True)
    ttft_ms = models.FloatField(null=True)
    client_ttft_ms = models.FloatField(null=True)
    # Read aloud (docs/speech.md): from the first sentence's end (or the person's ask, if later)
    # to its audio made on a worker, for the latest reading of this answer.
    speech_first_ms = models.FloatField(null=True)
    tool_ms = models.FloatField(null=True)  # the chat's tool calls: waiting for a person's yes, and running them
    e2e_ms = models.FloatField(null=True)
    tpot_ms = models.FloatField(null=True)
    prompt_tokens = models.PositiveIntegerField(null=True)
    cached_tokens = models.PositiveIntegerField(null=True)
    # Of the cached tokens, those restored from the conversation's saved KV state (kvstore.py).
    restored_tokens = models.PositiveIntegerField(null=True)
    # The KV cells its sequence had reserved in the engine's shared cache (prompt and max_tokens,
    # at most the per-request limit): what it took from the others while it ran.
    kv_cells = models.PositiveIntegerField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    prompt_tps = models.FloatField(null=True)
    output_tps = models.FloatField(null=True)
    cold = models.BooleanField(default=False)
    # Speculative decoding: draft tokens verified, those the sampler kept, and the model steps
    # that gave this answer tokens (output_tokens / decode_steps is its tokens per step).
    spec_drafted = models.PositiveIntegerField(null=True)
    spec_accepted = models.PositiveIntegerField(null=True)
    decode_steps = models.PositiveIntegerField(null=True)
    # Each token's time since arrival (ms); inter-token gaps are its differences.
    token_times_ms = models.JSONField(default=list, blank=True)
    token_texts = models.JSONField(default=list, blank=True)
    itl_ms = models.JSONField(default=list, blank=True)
    # The chat's tool calls in this answer, each a card: tool, arguments, status, result, ms.
    tool_calls = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"generation {self.id} ({self.status})"

    METRIC_FIELDS = (
        "queue_ms",
        "retrieve_ms",
        "load_ms",
        "prefill_ms",
        "first_token_ms",
        "decode_ms",
        "ttft_ms",
        "client_ttft_ms",
        "speech_first_ms",
        "tool_ms",
        "e2e_ms",
        "tpot_ms",
        "prompt_tokens",
        "cached_tokens",
        "restored_tokens",
        "kv_cells",
        "output_tokens",
        "prompt_tps",
        "output_tps",
        "finish_reason",
        "cold",
        "spec_drafted",
        "spec_accepted",
        "decode_steps",
    )

    def metrics(self) -> dict:
        """The answer's metrics as the chat, the API and the dashboard's feed get them, with the
        time spent in each phase (phase_ms) for the phase bar."""
        values = {name: getattr(self, name) for name in self.METRIC_FIELDS}
        rates = speculation_rates(self.spec_drafted, self.spec_accepted, self.output_tokens, self.decode_steps)
        return {**values, **rates, "phase_ms": phase_ms(values), "model": self.model_name}

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class Preset(ChatSettings):
    """A person's own named chat settings; the built-in ones are BUILTIN, constants, not rows."""

    BUILTIN = {
        "precise": {"name": pgettext_lazy("preset", "Precise"), "temperature": 0.2, "top_p": 0.9},
        "balanced": {"name": pgettext_lazy("preset", "Balanced"), "temperature": 0.7, "top_p": 0.95},
        "creative": {"name": pgettext_lazy("preset", "Creative"), "temperature": 1.0, "top_p": 0.98},
    }
    NAME_CHARS = 60

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="presets")
    name = models.CharField(max_length=NAME_CHARS)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="preset_unique_name_per_user")]

    def __str__(self) -> str:
        return self.name


class EmbeddingBatch(models.Model):
    """One embeddings request (/v1/embeddings, /api/embed): its inputs' count, tokens and phases.
    The texts and vectors are not kept: the client has them, and the dashboard needs only sizes."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        DONE = "done"
        ERROR = "error"  # refused by the worker (an input past the context with truncate off), or it failed
        INTERRUPTED = "interrupted"  # no worker answered in time

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="embedding_batches")
    client = models.CharField(max_length=32, default="api")  # the API client's name, as on Generation
    model_name = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    inputs = models.PositiveIntegerField()
    prompt_tokens = models.PositiveIntegerField(null=True)
    queue_ms = models.FloatField(null=True)  # arrival at the web server to a worker starting it
    load_ms = models.FloatField(null=True)  # the model loading, when this batch had to load it
    compute_ms = models.FloatField(null=True)  # tokenizing and encoding every input
    e2e_ms = models.FloatField(null=True)  # arrival to the answer, as the web server saw it
    t_arrive_ns = models.BigIntegerField()
    worker = models.CharField(max_length=255, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"embedding batch {self.id} ({self.status})"


class ChatShare(models.Model):
    """A conversation shown read-only to others in the house: the people named, or everyone
    signed in. Its link carries the token; revoking deletes the row, so the link ends with it."""

    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="share")
    token = models.CharField(max_length=43, unique=True)  # the link's unguessable part
    everyone = models.BooleanField(default=False)
    people = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="chats_shared_with")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"share of conversation {self.conversation_id}"


class ToolServer(models.Model):
    """An MCP server staff registered: its tools are offered in the chat (inference/tools).

    tools: what its list_tools said at the last refresh, each {"name", "description",
    "parameters", "acts"}; acts (the tool changes the world: it waits for the person's yes) is
    the server's own hint (not readOnlyHint) until staff change it."""

    class Transport(models.TextChoices):
        HTTP = "http", pgettext_lazy("tool server transport", "Streamable HTTP")
        STDIO = "stdio", pgettext_lazy("tool server transport", "Command (stdio)")

    name = models.CharField(max_length=60, unique=True)
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.HTTP)
    url = models.URLField(max_length=500, blank=True)  # streamable HTTP
    command = models.CharField(max_length=500, blank=True)  # stdio: the program and its arguments
    enabled = models.BooleanField(default=True)
    tools = models.JSONField(default=list, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)  # the last refresh's failure
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ToolPreference(models.Model):
    """The tools (their keys) a person turned off for all their chats."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tool_preference")
    off = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"tools of user {self.user_id}"
