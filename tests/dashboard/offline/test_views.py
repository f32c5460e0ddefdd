"""The installable app's files (manifest, service worker) and the key a chat page names its person by."""

from __future__ import annotations

import json
import re
import struct

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from dashboard.offline.views import PERSON_HEADER
from tests import factories


def png_size(url: str) -> tuple[int, int]:
    """A static PNG's width and height, from its header."""
    path = finders.find(url.removeprefix("/static/"))
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", url
    return struct.unpack(">II", head[16:24])


@pytest.mark.django_db
def test_the_manifest_names_the_app_its_start_page_and_icons_chromium_installs_from():
    response = Client().get("/manifest.webmanifest")  # browsers fetch it without signing in

    assert response.status_code == 200
    assert response["Content-Type"] == "application/manifest+json"
    manifest = json.loads(response.content)
    assert manifest["name"] == manifest["short_name"] == "HomeAI"
    assert manifest["start_url"] == manifest["id"] == "/chat/"
    assert manifest["scope"] == "/" and manifest["display"] == "standalone"
    pngs = {(icon["sizes"], icon["purpose"]): icon["src"] for icon in manifest["icons"] if icon["type"] == "image/png"}
    for (sizes, _purpose), src in pngs.items():
        width, height = png_size(src)
        assert sizes == f"{width}x{height}"
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= set(pngs)


@pytest.mark.django_db
def test_the_manifest_speaks_the_persons_language():
    client = Client()
    client.cookies["django_language"] = "pt-br"
    manifest = json.loads(client.get("/manifest.webmanifest").content)
    assert manifest["lang"] == "pt-br"
    assert manifest["description"] != json.loads(Client().get("/manifest.webmanifest").content)["description"]


@pytest.mark.django_db
def test_the_service_worker_is_javascript_at_the_root_with_the_apps_addresses():
    response = Client().get("/sw.js")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"  # a new version is found on the next visit
    assert response["Service-Worker-Allowed"] == "/"
    config = json.loads(re.search(r"^const CONFIG = (.*);$", response.content.decode(), re.M).group(1))
    assert config == {
        "chat": "/chat/",
        "deleteChat": "/chat/0/delete/",
        "signIn": "/accounts/login/",
        "static": "/static/",
        "catalog": "/i18n/catalog.js",
        "personHeader": PERSON_HEADER,
    }


def test_both_are_served_before_the_first_account_exists(transactional_db):
    client = Client()
    assert client.get("/chat/").status_code == 302  # first run: every page leads to the setup
    assert client.get("/sw.js").status_code == 200
    assert client.get("/manifest.webmanifest").status_code == 200


@pytest.mark.django_db
def test_a_chat_page_names_its_person_by_a_key_that_is_neither_their_id_nor_anyone_elses():
    alice, bob = factories.user("alice"), factories.user("bob")
    keys = []
    for person in (alice, bob, alice):
        client = Client()
        client.force_login(person)
        keys.append(client.get("/chat/")[PERSON_HEADER])
    assert keys[0] == keys[2] != keys[1]
    assert re.fullmatch(r"[0-9a-f]{32}", keys[0])  # a signed digest, not the id itself

    signed_out = Client().get("/chat/")
    assert signed_out.status_code == 302 and PERSON_HEADER not in signed_out
