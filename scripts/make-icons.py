"""Draws the app's PNG icons from their SVGs with Debian's Chromium (run once; the PNGs are committed).

    .venv/bin/python scripts/make-icons.py

static/icons/icon.svg (docker/icon.svg, rounded corners on a clear ground) gives the ordinary
icons; icon-maskable.svg (the same house at 80 % on a full square, inside the safe circle a
phone's mask keeps) gives the maskable one and Apple's home-screen icon, which iOS rounds itself.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import sync_playwright

ICONS = Path(__file__).resolve().parent.parent / "static" / "icons"
# (source, size, output)
DRAWN = [
    ("icon.svg", 192, "icon-192.png"),
    ("icon.svg", 512, "icon-512.png"),
    ("icon-maskable.svg", 512, "icon-maskable-512.png"),
    ("icon-maskable.svg", 180, "apple-touch-icon.png"),
]


def main() -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"], headless=True)
        for source, size, output in DRAWN:
            page = browser.new_page(viewport={"width": size, "height": size})
            svg = (ICONS / source).read_text()
            style = f"<style>html,body{{margin:0}} svg{{display:block;width:{size}px;height:{size}px}}</style>"
            page.set_content(style + svg)
            page.screenshot(path=str(ICONS / output), omit_background=True)
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
