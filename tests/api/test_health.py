"""/healthz: 503 with a reason a person can act on when no worker is alive; detail for staff."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from inference.dispatch import registry

WORKER = {"box:1": {"worker": "box:1", "model": "m.gguf", "loaded": True, "running": 0, "waiting": 0, "policy": "fcfs"}}


@pytest.fixture
def no_workers(monkeypatch):
    monkeypatch.setattr(registry, "live_workers", lambda: {})


@pytest.fixture
def one_worker(monkeypatch):
    monkeypatch.setattr(registry, "live_workers", lambda: WORKER)


def test_without_a_worker_the_service_is_503_and_says_what_to_do(db, no_workers):
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == 503 and body["status"] == "error"
    assert body["workers"] == {"ok": False, "count": 0}
    assert any("No inference worker is running" in reason for reason in body["reasons"])


def test_without_a_worker_the_web_itself_is_healthy(db, no_workers):
    response = Client().get("/healthz/web")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_with_a_worker_all_is_well_and_only_staff_see_the_workers(db, one_worker):
    anonymous = Client().get("/healthz").json()
    assert anonymous["status"] == "ok" and anonymous["reasons"] == [] and "items" not in anonymous["workers"]
    staff = get_user_model().objects.create_user("ops", password="x" * 12, is_staff=True)
    client = Client()
    client.force_login(staff)
    detail = client.get("/healthz").json()
    assert detail["workers"]["items"][0]["worker"] == "box:1"


def test_redis_down_is_503_and_its_error_text_is_for_staff_only(db, monkeypatch):
    def down():
        raise ConnectionError("Error 111 connecting to 10.0.0.7:6379. Connection refused.")

    monkeypatch.setattr(registry, "live_workers", down)
    body = Client().get("/healthz/web").json()
    assert body["status"] == "error" and body["redis"] == {"ok": False}
    assert any("Redis does not answer" in reason for reason in body["reasons"])
    assert "10.0.0.7" not in str(body)
    staff = get_user_model().objects.create_user("ops", password="x" * 12, is_staff=True)
    client = Client()
    client.force_login(staff)
    assert "10.0.0.7" in client.get("/healthz/web").json()["redis"]["error"]


def test_health_answers_as_llama_cpps_server_does(db, one_worker, monkeypatch):
    assert Client().get("/health").json() == {"status": "ok"}
    monkeypatch.setattr(registry, "live_workers", lambda: {})
    response = Client().get("/health")
    error = response.json()["error"]
    assert response.status_code == 503 and error["code"] == 503 and error["type"] == "unavailable_error"
    assert "No inference worker is running" in error["message"]
