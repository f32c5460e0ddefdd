from __future__ import annotations

import pytest

from infra.origin import origin_allowed


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("http://192.168.1.20:8000", "192.168.1.20:8000", True),
        ("http://nas.local:8000", "NAS.local:8000", True),
        ("http://evil.example", "192.168.1.20:8000", False),
        ("http://192.168.1.20:9000", "192.168.1.20:8000", False),
        ("", "192.168.1.20:8000", False),
        ("null", "192.168.1.20:8000", False),
        # A DNS-rebinding page: its own name, pointed at the box, is no name the box answers to.
        ("http://rebind.example:8000", "rebind.example:8000", False),
    ],
)
def test_only_pages_from_this_server_may_open_a_socket(origin, host, allowed, settings):
    settings.ALLOWED_HOSTS = ["192.168.1.20", "nas.local"]
    assert origin_allowed(origin, host) is allowed


def test_trusted_origins_are_accepted_for_reverse_proxies(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://ai.example.org"]
    assert origin_allowed("https://ai.example.org", "127.0.0.1:8000")
