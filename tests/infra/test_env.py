from __future__ import annotations

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured

from infra.env import env_auto_int, env_bool, env_choice, env_int, env_list, env_str, private_file, redis_url


def test_it_reads_typed_values(monkeypatch):
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_int("X_INT", 1) == 42
    assert env_bool("X_BOOL") is True
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_int("X_MISSING", 7) == 7


@pytest.mark.parametrize(
    ("call", "value", "words"),
    [
        (lambda: env_int("X", 1), "many", "X='many' is not a whole number"),
        (lambda: env_int("X", 1, minimum=2), "1", "X=1 is below the minimum of 2"),
        (lambda: env_bool("X"), "perhaps", "X='perhaps' is not a boolean"),
        (lambda: env_choice("X", "a", ("a", "b")), "c", "X='c' is not one of: a, b"),
        (lambda: env_auto_int("X"), "lots", "X='lots' is neither a whole number nor auto"),
        (lambda: env_auto_int("X", maximum=64), "65", "X=65 is above the maximum of 64"),
    ],
)
def test_a_bad_value_names_the_variable(monkeypatch, call, value, words):
    monkeypatch.setenv("X", value)
    with pytest.raises(ImproperlyConfigured, match=words):
        call()


def test_auto_or_nothing_leaves_a_number_to_the_app(monkeypatch):
    monkeypatch.setenv("X_AUTO", "auto")
    monkeypatch.setenv("X_SET", "6")
    assert (env_auto_int("X_AUTO"), env_auto_int("X_SET"), env_auto_int("X_MISSING")) == (None, 6, None)


def test_secrets_can_come_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("X_FILE", str(secret))
    assert env_str("X") == "s3cret"


@pytest.mark.parametrize(
    ("url", "password", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "", "redis://127.0.0.1:6379/0"),
        ("redis://127.0.0.1:6379/0", "p@ss word/1", "redis://:p%40ss%20word%2F1@127.0.0.1:6379/0"),
        ("redis://homeai@nas.lan:6379/1", "pw", "redis://homeai:pw@nas.lan:6379/1"),
        ("unix:///run/redis.sock?db=2", "pw", "unix://:pw@/run/redis.sock?db=2"),
        # A password in the URL wins.
        ("redis://:own@nas.lan:6379/0", "pw", "redis://:own@nas.lan:6379/0"),
        ("redis://nas.lan:6379/0?password=own", "pw", "redis://nas.lan:6379/0?password=own"),
    ],
)
def test_the_redis_password_is_added_to_a_url_that_carries_none(url, password, expected):
    assert redis_url(url, password) == expected
    if password and expected != url:
        assert redis.connection.parse_url(expected)["password"] == password


def test_a_private_file_is_made_once_and_readable_by_its_account_alone(tmp_path):
    path = tmp_path / "kept"
    assert private_file(path, lambda: "first") == "first"
    assert private_file(path, lambda: "second") == "first"
    assert path.stat().st_mode & 0o777 == 0o600
