"""The timeline against bundles with known truth (fixtures/timeline, made here)."""
import json
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from postmortem.model import Basis
from postmortem.run import Options, analyze

ROOT = Path(__file__).resolve().parent.parent
TWO_HOST = ROOT / "fixtures/timeline/two-host"
TIMES = json.loads((ROOT / "fixtures/timeline/two-host.times.json").read_text())


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, timezone.utc)


def _event(analysis, needle: str, kind_prefix: str = "kernel."):
    return next(e for e in analysis.case.events if needle in e.text and e.kind.startswith(kind_prefix))


def _crash_line(analysis):
    """The kernel's segfault line of the rank that crashed (its pid from the launcher table)."""
    failed = next(e for e in analysis.case.events if e.kind == "launcher.child_failed" and e.host == "node-b")
    return next(e for e in analysis.case.events if e.kind == "kernel.segfault" and e.pid == failed.pid)


def test_kernel_marker_and_segfault_land_on_recorded_wall_times():
    a = analyze(TWO_HOST)
    marker = _event(a, TIMES["marker"])
    assert marker.when.basis is Basis.CONVERTED and "boot time" in marker.when.note
    assert abs((marker.when.at - _at(TIMES["marker_written_at"])).total_seconds()) < 1.0
    crash = _crash_line(a)
    assert abs((crash.when.at - _at(TIMES["crash_at"])).total_seconds()) < 1.0


def test_without_boot_time_the_kernel_clock_is_anchored_on_a_process_death(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(TWO_HOST, bundle)
    for f in bundle.rglob("proc_stat_btime.txt"):
        f.unlink()
    a = analyze(bundle)
    marker = _event(a, TIMES["marker"])
    assert marker.when.at is not None and "anchored on" in marker.when.note
    assert marker.when.uncertainty_s >= 1.0
    assert abs((marker.when.at - _at(TIMES["marker_written_at"])).total_seconds()) < 2.0


def test_without_any_clock_kernel_lines_are_order_only(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    shutil.copy(TWO_HOST / "node-b/dmesg.txt", bundle / "dmesg.txt")
    a = analyze(bundle)
    marker = _event(a, TIMES["marker"])
    assert marker.when.at is None and marker.when.basis is Basis.ORDER_ONLY


_GLOG = re.compile(r"(?P<p>^\[?[IWEF])(?P<md>\d{4}) (?P<t>\d\d:\d\d:\d\d\.\d{6})")
_ASCTIME = re.compile(r"^(?P<d>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3})")
_TABLE = re.compile(r"(?P<p>time\s+: )(?P<d>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)")


def _shift_line(line: str, delta: timedelta) -> str:
    def glog(m):
        t = datetime.strptime("2026" + m["md"] + " " + m["t"], "%Y%m%d %H:%M:%S.%f") + delta
        return f"{m['p']}{t:%m%d %H:%M:%S.%f}"

    def asc(m):
        t = datetime.strptime(m["d"] + "." + m["ms"], "%Y-%m-%d %H:%M:%S.%f") + delta
        return f"{t:%Y-%m-%d %H:%M:%S},{m['ms']}"

    def table(m):
        t = datetime.strptime(m["d"], "%Y-%m-%d_%H:%M:%S") + delta
        return f"{m['p']}{t:%Y-%m-%d_%H:%M:%S}"

    return _TABLE.sub(table, _ASCTIME.sub(asc, _GLOG.sub(glog, line)))


@pytest.mark.parametrize("skew_s", [37.0, -125.5])
def test_two_host_skew_is_recovered_from_anchors(tmp_path, skew_s):
    """node-a's clock runs `skew_s` ahead: every time it printed is shifted, as a skewed
    clock would have printed it; the rendezvous both agents logged gives the skew back."""
    bundle = tmp_path / "b"
    shutil.copytree(TWO_HOST, bundle)
    log = bundle / "node-a/train.log"
    log.write_text("".join(_shift_line(l, timedelta(seconds=skew_s)) for l in log.read_text().splitlines(True)))
    base = analyze(TWO_HOST)
    a = analyze(bundle)
    note = next(n for n in a.timeline_notes if n.startswith("clock of node-a"))
    got = float(re.search(r"is ([+-][\d.]+) s", note).group(1))
    assert abs(got - skew_s) < 0.5
    # after correction node-a's rendezvous line sits where it sat without skew
    rdzv = lambda an: next(e for e in an.case.events if e.kind == "msg.rendezvous_complete" and e.host == "node-a")
    assert rdzv(a).when.basis is Basis.ANCHORED
    assert abs((rdzv(a).when.at - rdzv(base).when.at).total_seconds()) < 0.5


def test_untimed_crash_report_is_pinned_to_the_launcher_record_of_its_death():
    lab = ROOT / "fixtures/bundles/lab-torchrun-sigbus-shm/bundle"
    if not lab.exists():
        pytest.skip("lab bundle missing")
    a = analyze(lab)
    fatal = [e for e in a.case.events if e.kind == "py.fatal_signal"]
    assert fatal
    for e in fatal:
        assert e.when.at is not None and e.when.basis is not Basis.MEASURED
        assert e.when.uncertainty_s is not None or "pinned" in e.when.note or "placed" in e.when.note


def test_tz_option_changes_local_times_and_says_so():
    a = analyze(TWO_HOST, Options(tz="+02:00"))
    rdzv = next(e for e in a.case.events if e.kind == "msg.rendezvous_complete" and e.host == "node-b")
    assert rdzv.when.at.utcoffset() == timedelta(hours=2)
    assert any("--tz +02:00" in n for n in a.timeline_notes)
    b = analyze(TWO_HOST)
    assert any("UTC (assumed" in n for n in b.timeline_notes)


def test_every_event_of_every_fixture_bundle_has_a_basis():
    for bundle in [*sorted((ROOT / "fixtures/corpus").glob("*/bundle")), TWO_HOST]:
        a = analyze(bundle)
        for e in a.case.events:
            assert e.when is not None and e.when.basis in Basis, (bundle, e.kind, e.ref)
            if e.when.basis is not Basis.MEASURED and e.when.at is not None:
                assert e.when.note, (bundle, e.kind)
