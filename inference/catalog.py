"""The models people and API clients can ask for, as the web sees them: those the living
workers hold (their heartbeats), those some worker held before (a request for one waits until a
worker holding it is back), and the default one (the model library's choice)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import redis
from django.conf import settings

from inference import model_library
from inference.dispatch import registry
from inference.models import EngineConfig
from infra.errors import ClientError


@dataclass(frozen=True)
class Catalog:
    default: str  # the model file a chat uses unless it names another
    holders: dict[str, list[str]]  # model file -> the living workers that hold it
    described: dict[str, dict]  # model file -> its description (model_library.describe), every known one
    workers: int  # living workers

    @functools.cached_property
    def names(self) -> list[str]:
        """Listing order: the default, the models workers hold now, then the others known."""
        rest = sorted(set(self.described) | set(self.holders), key=lambda n: (n not in self.holders, n.lower()))
        return [self.default] + [n for n in rest if n != self.default]

    @functools.cached_property
    def spellings(self) -> dict[str, str]:
        """Every accepted spelling (file name, "smollm2:135m", "smollm2") -> file name; the
        default's first."""
        pairs = [(name, self.described.get(name, {}).get("alias", "")) for name in self.names]
        return model_library.spellings(pairs)

    def resolve(self, spelling: str) -> str | None:
        spelling = spelling.strip()
        return self.spellings.get(spelling) or self.spellings.get(spelling.removesuffix(":latest"))

    def held(self, name: str) -> bool:
        return bool(self.holders.get(name))

    def alias(self, name: str) -> str:
        return self.described.get(name, {}).get("alias", "")

    def embeds(self, name: str) -> bool:
        """Whether the model gives embeddings rather than text (model_library.kind_of)."""
        return self.described.get(name, {}).get("kind") == model_library.EMBEDDING

    @functools.cached_property
    def chat_names(self) -> list[str]:
        """The models that write answers, in listing order (what a chat may choose)."""
        return [name for name in self.names if not self.embeds(name)]


def default_model() -> str:
    chosen = EngineConfig.objects.filter(pk=1).values_list("model_name", flat=True).first()
    return chosen or settings.HOMEAI_MODEL_PATH.name


def catalog(workers: dict[str, dict] | None = None, *, redis_optional: bool = False) -> Catalog:
    """The catalog now: one reading of the heartbeats and of the models ever announced, and the
    web's own models folder (on one machine, the workers' folder too).

    redis_optional: while Redis is down, the catalog of the web's own folder and the default
    (a chat message is still saved then, and sent when Redis is back); else its error raises."""
    described = {m.name: model_library.describe(m) for m in model_library.servable()}
    try:
        if workers is None:
            workers, announced = registry.live_workers_and_known_models()
        else:
            announced = registry.known_models()
        described.update(announced)
    except redis.RedisError:
        if not redis_optional:
            raise
        workers = {}
    holders: dict[str, list[str]] = {}
    for name, beat in workers.items():
        for model in beat.get("models") or []:
            described.setdefault(model["name"], model)
            holders.setdefault(model["name"], []).append(name)
    return Catalog(default=default_model(), holders=holders, described=described, workers=len(workers))


def model_for_answer(requested: str | None, *, field: str = "model") -> str:
    """The model file an answer is asked of: the requested one (any spelling) or the default.

    A model that no worker holds, and none ever held, is refused at once. One that a worker
    held before is accepted: the answer waits until a worker holding it starts (and the
    watchdog tells the person so). While Redis is down, the models the web knows of itself."""
    known = catalog(redis_optional=True)
    if not requested:
        return known.default
    name = known.resolve(requested)
    if name is None:
        listing = ", ".join(f"{n} ({known.alias(n)})" if known.alias(n) else n for n in known.names)
        raise ClientError(
            "model_not_found",
            f"No worker has a model named {requested!r}. The models here: {listing}.",
            field=field,
        )
    if known.embeds(name):
        raise ClientError("embedding_model", embedding_model_message(requested), field=field)
    return name


def embedding_model_message(requested: str) -> str:
    return (
        f"{requested} is an embedding model: it gives vectors for /v1/embeddings and /api/embed, "
        "not answers. Choose a chat model."
    )
