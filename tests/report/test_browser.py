"""Each report in headless Chromium from file://: no network request, no console error,
and the injection fixture stays inert.  Skipped only when /usr/bin/chromium is absent.

Set POSTMORTEM_UPDATE_SCREENSHOT=1 to rewrite docs/report.png (shown in README).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.report.reports import BUNDLES, ROOT, report

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
SCREENSHOT_CASE = "cores"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


class Watched:
    """A page opened from file:// with every request, console message, error and dialog recorded."""

    def __init__(self, browser, path: Path, scheme: str = "light") -> None:
        self.requests: list[str] = []
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        self.page.on("dialog", self._dialog)
        self.url = path.resolve().as_uri()
        self.page.goto(self.url, wait_until="load")
        # Let late handlers (onerror, onload) fire: wait until the page has rendered twice.
        self.page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    @property
    def outside_requests(self) -> list[str]:
        return [u for u in self.requests if u != self.url]


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.html"
    path.write_text(report(name), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_report_opens_offline_without_errors(browser, tmp_path, name):
    w = Watched(browser, _write(tmp_path, name))
    try:
        assert w.outside_requests == []
        assert w.problems == []
        assert w.dialogs == []
        assert w.page.locator("#verdict .cause").inner_text().strip()
        w.page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    finally:
        w.page.close()


def test_dark_mode_and_print_layout(browser, tmp_path):
    w = Watched(browser, _write(tmp_path, "cores"), scheme="dark")
    try:
        background = w.page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background != "rgb(255, 255, 255)"
        w.page.emulate_media(media="print")
        assert w.page.locator("button.copy").first.is_hidden()
        w.page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        assert w.page.evaluate("document.querySelectorAll('details:not([open])').length") == 0
    finally:
        w.page.close()


def test_filters_hide_marks_and_rows(browser, tmp_path):
    w = Watched(browser, _write(tmp_path, "cores"))
    try:
        visible = "document.querySelectorAll('#timeline [data-src=core]:not(.off)').length"
        before = w.page.evaluate(visible)
        assert before > 0
        w.page.locator("input[data-filter=src][value=core]").uncheck()
        assert w.page.evaluate(visible) == 0
        w.page.locator("input[data-filter=src][value=core]").check()
        assert w.page.evaluate(visible) == before
    finally:
        w.page.close()


def test_copy_button_copies_the_command(browser, tmp_path):
    w = Watched(browser, _write(tmp_path, "cores"))
    try:
        from playwright.sync_api import expect
        button = w.page.locator("button.copy").first
        button.click()
        # The label changes when the clipboard promise settles: wait for that state, not a time.
        expect(button).to_have_text(re.compile(r"^(copied|select \+ copy)$"), timeout=15_000)
        assert w.problems == []
    finally:
        w.page.close()


def test_injection_renders_inert(browser, tmp_path):
    w = Watched(browser, _write(tmp_path, "injection"))
    try:
        assert w.dialogs == [], "a payload ran"
        assert w.outside_requests == []
        assert w.problems == []
        dom = w.page.evaluate("""() => ({
            scripts: document.scripts.length,
            styles: document.querySelectorAll('style').length,
            payload: document.querySelectorAll('img, iframe, meta[http-equiv=refresh], #pm-injected, [onerror], [onload]').length,
            foreignLinks: [...document.querySelectorAll('a')].filter(a => !a.getAttribute('href').startsWith('#')).length,
            text: document.body.innerText,
        })""")
        assert dom["scripts"] == 2 and dom["styles"] == 1
        assert dom["payload"] == 0 and dom["foreignLinks"] == 0
        for shown in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>.log", "<svg onload=alert(5)>",
                      "</script><script>alert(3)</script>"):
            assert shown in dom["text"], shown
        w.page.screenshot(path=str(tmp_path / "injection.png"), full_page=True)
    finally:
        w.page.close()


def test_screenshot_for_the_readme(browser, tmp_path):
    """The README picture; written to docs/ only on request so a test run leaves the tree clean."""
    w = Watched(browser, _write(tmp_path, SCREENSHOT_CASE))
    try:
        target = ROOT / "docs" / "report.png" if os.environ.get("POSTMORTEM_UPDATE_SCREENSHOT") else tmp_path / "report.png"
        w.page.set_viewport_size({"width": 1280, "height": 1500})
        w.page.screenshot(path=str(target))
        assert target.stat().st_size > 10_000
    finally:
        w.page.close()
