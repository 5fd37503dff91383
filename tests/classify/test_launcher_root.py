"""torchrun's "Root Cause (first observed failure)" is weighed beside the verdict, never taken
as it: on real torchrun (gloo) runs from the crash lab and fixtures/launcher."""
import json
from pathlib import Path

from postmortem.report import jsonout
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"


def test_in_a_straggler_timeout_torchrun_names_the_rank_that_waited():
    """rank 0 sleeps in preprocess(); rank 1 times out in the barrier and exits first, so
    torchrun's root cause is rank 1 (exitcode 1); the late rank 0 is SIGTERM'd later."""
    v = analyze(BUNDLES / "lab-torchrun-straggler-timeout/bundle").verdict
    r = v.launcher_root
    assert v.cause == "straggler_timeout" and v.root.culprit_ranks == (0,)
    assert (r.rank, r.local_rank, r.host, r.exitcode, r.time) == (1, 1, "localhost", 1, "2026-11-29_08:39:49")
    assert r.pid is not None and r.error_file is None and r.ref.path == "train.log"
    assert r.agrees is False and "waited" in r.note


def test_in_a_four_rank_straggler_the_root_cause_is_not_the_late_rank():
    v = analyze(BUNDLES / "lab-flightrec-straggler/bundle").verdict
    assert v.root.culprit_ranks == (2,)
    assert v.launcher_root.rank != 2 and v.launcher_root.agrees is False


def test_in_a_crash_it_names_the_crashing_rank_and_agrees():
    v = analyze(BUNDLES / "lab-torchrun-oom-cgroup/bundle").verdict
    r = v.launcher_root
    assert v.cause == "host_oom"
    assert (r.rank, r.exitcode, r.signal, r.agrees) == (1, -9, "SIGKILL", True)


def test_an_error_file_missing_from_the_bundle_is_named(tmp_path):
    (tmp_path / "train.log").write_bytes((ROOT / "fixtures/launcher/torchrun_record_exception.log").read_bytes())
    a = analyze(tmp_path)
    r = a.verdict.launcher_root
    assert r.error_file and r.error_file.endswith("/attempt_0/1/error.json")
    assert f"its error file {r.error_file} is not in the bundle" in r.note
    doc = json.loads(jsonout.render(a))["verdict"]["launcher_root"]
    assert doc["rank"] == 1 and doc["error_file"] == r.error_file and doc["evidence"]["artifact"] == "train.log"


def test_no_launcher_table_no_launcher_root():
    v = analyze(ROOT / "fixtures/bundles/lab-fd-limit-dataloader/bundle").verdict
    assert v.launcher_root is None


def test_the_html_report_shows_the_weighing(tmp_path):
    from postmortem.report import render_text

    a = analyze(BUNDLES / "lab-torchrun-straggler-timeout/bundle")
    html = render_text("html", a)
    assert "Launcher&#39;s root cause" in html or "Launcher's root cause" in html
    assert "but the verdict blames rank 0" in html
