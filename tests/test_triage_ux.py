"""Triage as an issue list (issue 16) and under a time budget (issue 19 item 3)."""
from __future__ import annotations

import html
import json
import re
from concurrent.futures import Future
from pathlib import Path

import pytest

from postmortem import cli, stacks
from postmortem.model import Frame, Ref, Stack
from postmortem.run import analyze
from postmortem.triage import execute, group, render
from postmortem.triage.discover import Task
from postmortem.triage.work import BundleResult, Settings, analyze_one, crash_time

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _result(i: int, cause: str, signature: str, crash: str | None = None, seen: str | None = None) -> BundleResult:
    return BundleResult(name=f"b{i}", path=f"/x/b{i}", signature=signature, category="config", cause=cause,
                        seen=seen or crash, seen_basis="crash" if crash else "file-mtime", crash_time=crash,
                        hosts=(f"h{i}",))


def test_new_and_regressed_groups_come_first_and_are_never_cut_from_the_summary():
    old = [_result(i, "host_oom", f"sig2:config:host_oom:x{i}") for i in range(30)]
    baseline = group.build(old, ["in"])
    baseline["gone"] = [{"signature": "sig2:config:back:again", "category": "config", "cause": "back",
                         "count": 1, "last_seen": None}]
    now = old * 3 + [_result(90 + i, "shm_exhausted", f"sig2:config:shm_exhausted:n{i}") for i in range(12)]
    now.append(_result(99, "back", "sig2:config:back:again"))
    doc = group.build(now, ["in"], baseline, "base.json")
    order = [(g["regressed"], g["new"]) for g in doc["groups"]]
    assert order[0] == (True, True) and all(n for _, n in order[1:13]) and not any(n for _, n in order[13:])
    summary = render.render_summary(doc)
    for i in range(12):
        assert f"shm_exhausted:n{i}" in summary
    assert "sig2:config:back:again" in summary and "| regressed |" in summary
    assert doc["totals"]["regressed"] == 1


def test_groups_roll_up_by_cause_with_their_signatures_under_it():
    results = [_result(i, "shm_exhausted", f"sig2:config:shm_exhausted:s{i % 9}") for i in range(9)]
    doc = group.build(results + [_result(50, "host_oom", "sig2:config:host_oom:a")], ["in"])
    causes = {c["cause"]: c for c in doc["causes"]}
    assert causes["shm_exhausted"]["count"] == 9 and len(causes["shm_exhausted"]["signatures"]) == 9
    summary = render.render_summary(doc)
    block = summary.split("**By cause**")[1]
    assert re.search(r"- config / shm\\_exhausted: 9 bundles in 9 signature\(s\)", block)
    assert block.count("  - `sig2:config:shm_exhausted:") == 8 and "1 more" in block


def test_first_and_last_seen_are_crash_times_not_file_or_boot_times():
    results = [_result(1, "x", "s", crash="2026-11-29T08:40:19+00:00", seen="2026-11-29T08:40:19+00:00"),
               _result(2, "x", "s", crash=None, seen="2026-12-01T10:59:37+00:00"),   # only a file time
               _result(3, "x", "s", crash="2026-11-29T09:00:00+00:00")]
    g = group.build(results, ["in"])["groups"][0]
    assert (g["first_seen"], g["last_seen"]) == ("2026-11-29T08:40:19+00:00", "2026-11-29T09:00:00+00:00")


def test_crash_time_of_real_bundles():
    # The cores' only times are their files' mtimes (a checkout's time): no crash time.
    assert crash_time(analyze(FIXTURES / "cores")) is None
    # A kernel OOM kill converted from boot time + printk seconds: the kill's own moment.
    t = crash_time(analyze(FIXTURES / "bundles" / "lab-torchrun-oom-cgroup" / "bundle"))
    assert t is not None and t.startswith("2026-11-29T08:40:19")


def test_generic_cuda_check_frames_are_skipped_in_signatures():
    frames = (Frame(function="_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib", module="libc10_cuda.so"),
              Frame(function="c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"),
              Frame(function="at::native::my_kernel_launch", module="libtorch_cuda.so"))
    walk = stacks.walk(Stack(frames=frames, origin="gdb", ref=Ref("gdb.txt", 1), crashed=True))
    assert walk.frames and "c10_cuda_check" not in walk.frames[0] and "my_kernel_launch" in walk.frames[0]


def test_a_bundle_over_its_time_budget_is_its_own_group(tmp_path):
    task = Task(name="slow", path=str(FIXTURES / "demo" / "bundle"))
    r = analyze_one(task, Settings(html=False, time_limit=1e-9))
    assert r.timed_out and r.signature == "timeout" and r.category == "timeout"
    doc = group.build([r, _result(1, "x", "sig2:config:x:y")], ["in"])
    assert [g["signature"] for g in doc["groups"] if g["cause"] == "timeout"] == ["timeout"]
    assert doc["totals"]["timeouts"] == 1


def test_triage_time_limit_flag(tmp_path):
    out = tmp_path / "out"
    assert cli.main(["triage", str(FIXTURES / "validation2"), "--out", str(out), "-q", "--jobs", "1",
                     "--time-limit", "0.000001", "--no-reports"]) == 0
    doc = json.loads((out / "triage.json").read_text())
    assert {g["signature"] for g in doc["groups"]} == {"timeout"}


class _FakePool:
    """Runs each task on submit; records how many futures the caller holds at once."""

    held = 0
    most = 0

    def __init__(self, max_workers):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        f = Future()
        f.set_result(fn(*args))
        _FakePool.held += 1
        _FakePool.most = max(_FakePool.most, _FakePool.held)
        return f


def test_local_pool_keeps_a_bounded_window_of_futures(monkeypatch):
    """The parent drops each future once its result is handed on: memory does not grow
    with the number of bundles."""
    monkeypatch.setattr(execute, "ProcessPoolExecutor", _FakePool)
    monkeypatch.setattr(execute, "analyze_one", lambda task, settings: _result(0, "x", task.name))
    real_wait = execute.wait

    def counting_wait(pending, return_when):
        done, rest = real_wait(pending, return_when=return_when)
        _FakePool.held -= len(done)
        return done, rest

    monkeypatch.setattr(execute, "wait", counting_wait)
    tasks = [Task(name=f"t{i}", path=f"/x/{i}") for i in range(200)]
    got = list(execute.run_local(tasks, Settings(), jobs=2))
    assert len(got) == 200 and _FakePool.most <= 2 * execute.IN_FLIGHT_PER_JOB


def test_index_is_an_issue_list_with_sorting_filtering_and_counts(tmp_path):
    doc = group.build([_result(i, "shm_exhausted", f"sig2:config:shm_exhausted:s{i}") for i in range(3)], ["in"])
    page = render.render_index(doc)
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)[1])
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp and "unsafe-inline" not in csp
    assert 'id="q"' in page and 'data-filter="category"' in page and 'data-sort="count"' in page
    assert 'id="shown"' in page and "new (3)" in page and "<h2>By cause</h2>" in page
    assert "http://" not in page and "https://" not in page and "<script src" not in page


def test_index_sorts_filters_and_counts_in_a_browser(tmp_path):
    """The page's own script runs under its CSP (no console error) and works."""
    pytest.importorskip("playwright.sync_api")
    from tests.report.test_browser import ARGS, CHROMIUM, Watched

    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed")
    from playwright.sync_api import sync_playwright

    results = [_result(i, "shm_exhausted", f"sig2:config:shm_exhausted:s{i}") for i in range(3)]
    results += [_result(10 + i, "host_oom", "sig2:config:host_oom:a") for i in range(5)]
    path = tmp_path / "index.html"
    path.write_text(render.render_index(group.build(results, ["in"])), encoding="utf-8")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            w = Watched(b, path)
            shown = w.page.locator("#shown")
            assert shown.inner_text() == "4 of 4 groups shown (8 bundles)"
            first = lambda: w.page.locator("#issues tbody tr").first.get_attribute("data-count")
            w.page.locator("th[data-sort=count] button").click()
            assert first() == "5"
            w.page.locator("th[data-sort=count] button").click()
            assert first() == "1"
            w.page.fill("#q", "host_oom")
            assert shown.inner_text() == "1 of 4 groups shown (5 bundles)"
            w.page.fill("#q", "")
            w.page.locator("input[data-filter=status][value=new]").uncheck()
            assert shown.inner_text().startswith("0 of 4")
            assert w.problems == [] and w.outside_requests == []
        finally:
            b.close()
