"""A refused allocation larger than the host's RAM and swap together is the job's request, not host
memory running out (audit 13 M2): Linux's heuristic overcommit (mm/util.c __vm_enough_memory,
OVERCOMMIT_GUESS) refuses a single request above totalram_pages() + total_swap_pages with memory
free.  Real runs: fixtures/lab/output/lab-bigalloc, made by fixtures/lab/bigalloc/make.sh (beyond: a
65.5 TiB numpy array on a 23 GiB host; near miss within: 8 GiB under ulimit -v, the limit's)."""
from __future__ import annotations

from pathlib import Path

from postmortem.classify.rules.app import _host_memory, request_beyond_host
from postmortem.run import analyze

LAB = Path(__file__).resolve().parents[2] / "fixtures/lab/output/lab-bigalloc"


def test_a_request_larger_than_the_host_leans_to_the_jobs_code_not_host_memory():
    a = analyze(LAB / "beyond/bundle")
    v = a.verdict
    assert v.cause == "unknown", v.trace                   # one weak sign: a lean, never a claim
    assert "leaning app_error" in v.summary, v.summary
    assert any("host_oom support" in t and "counter 0.40" in t for t in v.trace), v.trace
    e, asked, host, _ = request_beyond_host(a.case)
    assert asked > 60 * (1 << 40) and 20 * (1 << 30) < host < 30 * (1 << 30)


def test_a_request_within_the_host_refused_under_ulimit_v_stays_the_limits():
    a = analyze(LAB / "within/bundle")
    assert request_beyond_host(a.case) is None
    assert a.verdict.cause == "host_oom", a.verdict.trace


def test_free_without_printed_units_is_not_read_as_the_hosts_size():
    # free -m prints bare numbers (MiB): the parser takes a bare number as KiB, so the rule must not
    # compare a request with it; meminfo's "kB" and free -h's "Gi" carry their unit
    a = analyze(LAB / "beyond/bundle")
    _, (total, swap) = _host_memory(a.case)
    assert total.ref.path.endswith("meminfo.txt") or any(c.isalpha() for c in str(total.text))
