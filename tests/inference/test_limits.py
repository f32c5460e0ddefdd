"""Daily limits: past a person's answers or tokens for the day, no answer is created, from the
chat and the API alike."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Account
from api import errors
from inference import selectors
from inference.models import Generation
from inference.services import generations
from infra.errors import ClientError
from tests import factories


def used_answer(user, **fields) -> Generation:
    """A finished answer a worker ran (it claimed it: one attempt)."""
    return factories.finished_generation(user, prompt="Hi", answer="Hello", **{"attempts": 1, **fields})


@pytest.mark.parametrize(
    "create",
    [
        lambda user: generations.generation_create(user=user, conversation_id=None, text="One more?"),
        lambda user: generations.generation_create_api(user=user, client="script", prompt="One more?"),
    ],
    ids=["chat", "api"],
)
def test_past_the_answers_a_day_nothing_is_created(db, create):
    user = factories.user()
    Account.objects.create(user=user, answers_per_day=2)
    used_answer(user)
    create(user)  # the second of two
    with pytest.raises(ClientError) as refused:
        create(user)
    assert refused.value.code == "limit_reached"
    assert "all 2 of today's answers" in refused.value.message
    assert Generation.objects.count() == 2


def test_past_the_tokens_a_day_nothing_is_created(db):
    user = factories.user()
    Account.objects.create(user=user, tokens_per_day=100)
    used_answer(user, prompt_tokens=90, output_tokens=10)
    with pytest.raises(ClientError) as refused:
        generations.generation_create(user=user, conversation_id=None, text="More?")
    assert refused.value.code == "limit_reached" and "100 tokens" in refused.value.message


def test_yesterdays_answers_and_ones_that_never_started_do_not_count(db):
    user = factories.user()
    Account.objects.create(user=user, answers_per_day=1)
    old = used_answer(user)
    Generation.objects.filter(id=old.id).update(created_at=selectors.day_start() - timedelta(minutes=1))
    used_answer(user, status=Generation.Status.CANCELLED, attempts=0)
    assert selectors.usage_today(user=user)["answers"] == 0
    generations.generation_create(user=user, conversation_id=None, text="Today's one")


def test_the_usage_sums_tokens_and_model_time(db):
    user = factories.user()
    used_answer(user, prompt_tokens=120, output_tokens=8)
    used_answer(user, prompt_tokens=30, output_tokens=2)
    usage = selectors.usage_by_user(since=timezone.now() - timedelta(days=1))[user.id]
    one = factories.generation_metrics()
    assert usage["answers"] == 2 and usage["tokens"] == 160
    assert usage["model_ms"] == pytest.approx(2 * (one["prefill_ms"] + one["first_token_ms"] + one["decode_ms"]))


def test_no_account_row_means_no_limit(db):
    user = factories.user()
    for _ in range(3):
        used_answer(user)
    assert not Account.objects.filter(user=user).exists()
    generation = generations.generation_create(user=user, conversation_id=None, text="Fine")
    assert generation.status == Generation.Status.QUEUED and generation.user_id == user.id


def test_the_api_answers_a_reached_limit_as_openai_does_out_of_quota():
    error = errors.from_client_error(ClientError("limit_reached", "You have used all 2 of today's answers."))
    assert (error.status, error.code) == (429, "insufficient_quota")
