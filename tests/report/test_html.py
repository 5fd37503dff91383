"""The HTML report's structure, for every corpus case, the cores and the injection fixture."""
from __future__ import annotations

import html as html_module
import json
import re

import pytest

from postmortem.report import html
from tests.report.reports import BUNDLES, Page, analysis, report

CASES = sorted(BUNDLES)
URL = re.compile(r"https?://[^\s\"'<>)]+")


@pytest.mark.parametrize("name", CASES)
def test_verdict_is_at_the_top(name):
    page = Page(report(name))
    v = analysis(name).verdict
    assert "verdict" in page.ids
    assert v.cause in page.all_text
    assert f"confidence {v.confidence:.2f}" in page.all_text
    assert page.all_text.index(v.cause) < page.all_text.index("Evidence")


@pytest.mark.parametrize("name", CASES)
def test_every_link_stays_in_the_page_and_resolves(name):
    page = Page(report(name))
    for href in page.hrefs:
        assert href.startswith("#"), href
        assert href[1:] in page.ids, f"dangling anchor {href}"


@pytest.mark.parametrize("name", CASES)
def test_nothing_points_outside(name):
    page = Page(report(name))
    for tag, attr, value in page.attributes:
        assert attr not in ("src", "srcset", "action", "formaction", "background", "poster", "ping"), (tag, attr)
        assert not URL.search(value), (tag, attr, value)
    for block in page.raw_blocks["style"] + page.raw_blocks["script"]:
        assert not URL.search(block)
        assert "@import" not in block and "url(" not in block
    assert page.tags.count("script") == 2 and page.tags.count("style") == 1
    assert "iframe" not in page.tags and "img" not in page.tags and "link" not in page.tags


@pytest.mark.parametrize("name", CASES)
def test_urls_in_text_come_from_the_bundle_or_the_knowledge(name):
    a = analysis(name)
    v = a.verdict
    known = " ".join([*(e.text for e in a.case.events), *(r.text for f in (v.root, *v.symptoms) if f for r in f.evidence),
                      v.explanation, v.summary, *v.remediation, *v.next_steps, *v.counter_evidence, *v.collect, *v.trace,
                      *(x.message for x in a.case.artifacts), *a.timeline_notes])
    for url in URL.findall(Page(report(name)).all_text):
        assert url.rstrip(".,;") in known, url


@pytest.mark.parametrize("name", CASES)
def test_csp_forbids_the_network(name):
    text = report(name)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert csp, "no CSP meta"
    policy = html_module.unescape(csp.group(1))
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy and "http" not in policy


@pytest.mark.parametrize("name", CASES)
def test_every_artifact_is_listed(name):
    page = Page(report(name))
    text = page.all_text
    for x in analysis(name).case.artifacts:
        assert x.path in text, x.path
    assert sum(1 for i in page.ids if i.startswith("art-")) == len(analysis(name).case.artifacts)


@pytest.mark.parametrize("name", CASES)
def test_evidence_and_timeline_rows_link_both_ways(name):
    text = report(name)
    page = Page(text)
    v = analysis(name).verdict
    evidence_ids = sorted(i for i in page.ids if i.startswith("ev-"))
    assert len(evidence_ids) >= len(v.root.evidence if v.root else ())
    for ev in evidence_ids:
        article = re.search(rf'<article id="{ev}".*?</article>', text, re.S).group(0)
        row = re.search(r'href="#(row-\d+)"', article)
        if row is None:
            continue  # cited line not in the timeline (e.g. a fact's line)
        tr = re.search(rf'<tr id="{row.group(1)}".*?</tr>', text, re.S).group(0)
        assert f'href="#{ev}"' in tr, f"{row.group(1)} does not link back to {ev}"


@pytest.mark.parametrize("name", CASES)
def test_timeline_svg_and_rows(name):
    a = analysis(name)
    page = Page(report(name))
    if a.case.events:
        assert "svg" in page.tags
        assert any(i.startswith("row-") for i in page.ids)
    roots = [i for i in page.ids if i.startswith("row-")]
    assert len(roots) <= len(a.case.events)


def test_inferred_times_are_marked():
    text = report("cores")   # core files placed by their mtime: inferred, ±60 s
    assert "≈" in text and "file-mtime" in text and "±1 min" in text
    assert "Unplaced:" in text   # gdb text has no time at all


def test_root_fault_is_marked():
    text = report("xid79-fell-off-bus-01")
    assert 'class="root-ring"' in text and "rootmark" in text


def test_core_facts_show_fault_mapping_and_offset():
    text = Page(report("cores")).all_text
    assert "SIGBUS (7)" in text and "BUS_ADRERR (2)" in text
    assert "0x7ff41cabd000 → /dev/shm/torch_12888_0 + 64.0 MiB" in text


def test_crashing_thread_comes_first():
    text = report("cores")
    first_stack = re.search(r'<div class="stack" id="stack-1">.*?</div>', text, re.S).group(0)
    assert "crashing thread" in first_stack


def test_evidence_shows_context_lines():
    a = analysis("xid79-fell-off-bus-01")
    cited = a.verdict.root.evidence[0]
    with_context = html.render(a, bundle_path=BUNDLES["xid79-fell-off-bus-01"])
    alone = html.render(a)
    assert with_context.count('class="ln') > alone.count('class="ln')
    assert f'<span class="no">{cited.line}</span>' in alone


def test_unknown_verdict_says_what_to_collect(tmp_path):
    from postmortem.run import analyze

    (tmp_path / "notes.txt").write_text("training started\nall good\n")
    a = analyze(tmp_path)
    assert a.verdict.category.value == "unknown"
    text = Page(html.render(a)).all_text
    assert "What to collect" in text
    for line in a.verdict.collect[:3]:
        assert line.replace("`", "") in text


def test_verdict_json_island_parses_and_matches():
    text = report("injection")
    body = re.search(r'<script type="application/json" id="pm-verdict">(.*?)</script>', text, re.S).group(1)
    assert "<" not in body and ">" not in body and "&" not in body
    data = json.loads(body)
    assert data["cause"] == analysis("injection").verdict.cause
    assert data["schema"] == "postmortem.verdict/1"


def test_script_json_escapes_everything_that_could_end_a_script():
    out = html.script_json({"x": "</script><!-- & \u2028\u2029"})
    assert "<" not in out and ">" not in out and "&" not in out and "\u2028" not in out and "\u2029" not in out
    assert json.loads(out) == {"x": "</script><!-- & \u2028\u2029"}


def test_injection_markup_is_escaped_text():
    text = report("injection")
    page = Page(text)
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script>alert(1)</script>" in page.all_text          # shown, as text
    assert "<img src=x onerror=alert(1)>.log" in page.all_text
    assert not any(attr.startswith("on") for _, attr, _ in page.attributes)
    assert "pm-injected" not in page.ids
