"""Kernel-log parser on real kernel output (fixtures/kernel/SOURCE.md)."""
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.model import ClockKind, Severity
from postmortem.parsers import kernel, parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kernel"
ALL_FIXTURES = sorted(p for p in FIX.rglob("*.txt") if p.name != "uname.txt")
THIS_HOST = ["dmesg_raw.txt", "dmesg_T.txt", "dmesg_iso.txt", "dmesg_x.txt", "dmesg_xT.txt", "dmesg_d.txt",
             "dmesg_r.txt", "dmesg_H.txt", "kmsg.txt"]


def parse(name: str):
    return parse_text(name, (FIX / name).read_text(errors="replace").splitlines())


def kinds(result, kind):
    return [e for e in result.sink.events if e.kind == kind]


def test_grammar_builds_strict():
    load("kernel", strict=True)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIX)))
def test_every_line_claimed_and_becomes_an_event(path):
    r = parse(str(path.relative_to(FIX)))
    assert r.unclaimed == 0 and not r.sink.problems
    lines = {e.ref.line for e in r.sink.events if e.kind.startswith("kernel.")}
    assert lines == set(range(1, r.lines + 1))


# -- dmesg styles produced on this machine (fixtures/kernel/make_dmesg.sh) ---------------------

EXPECTED_CLOCK = {
    "dmesg_raw.txt": ClockKind.BOOT, "dmesg_x.txt": ClockKind.BOOT, "dmesg_d.txt": ClockKind.BOOT,
    "dmesg_r.txt": ClockKind.BOOT, "kmsg.txt": ClockKind.BOOT, "dmesg_T.txt": ClockKind.WALL_LOCAL,
    "dmesg_xT.txt": ClockKind.WALL_LOCAL, "dmesg_iso.txt": ClockKind.WALL,
}


@pytest.mark.parametrize("name", THIS_HOST)
def test_segfaults_and_traps_in_every_dmesg_style(name):
    r = parse(name)
    segv = [e for e in kinds(r, "kernel.segfault") if e.data["signal"] == "SIGSEGV"]
    fpe = [e for e in kinds(r, "kernel.segfault") if e.data["signal"] == "SIGFPE"]
    assert len(segv) == 4 and len(fpe) == 2
    py = [e for e in segv if e.data["comm"] == "python3"]
    assert len(py) == 2 and py[0].pid == 8322 and py[0].data["library"] == "libc.so.6"
    assert py[0].data["addr"] == "10" and py[0].data["error"] == "4"
    assert fpe[0].data["comm"] == "pm_div" and fpe[0].data["ip"] == "560563caf146"
    markers = [e for e in kinds(r, "kernel.line") if "postmortem-marker" in e.data.get("msg", "")]
    assert len(markers) == 2
    if name in EXPECTED_CLOCK:
        assert py[0].stamp.clock is EXPECTED_CLOCK[name]


def test_raw_boot_seconds_and_decoded_facility():
    r = parse("dmesg_x.txt")
    (marker, _) = [e for e in kinds(r, "kernel.line") if "postmortem-marker" in e.data.get("msg", "")]
    assert marker.stamp.seconds == pytest.approx(347.597331)
    assert marker.data["facility"] == "user" and marker.data["level"] == "warn"


def test_kmsg_priority_decoded():
    r = parse("kmsg.txt")
    marker = [e for e in kinds(r, "kernel.line") if "postmortem-marker" in e.data.get("msg", "")][0]
    assert (marker.data["facility"], marker.data["level"]) == ("user", "warn")  # pri 12
    assert marker.stamp.seconds == pytest.approx(347.597331)


def test_iso_and_ctime_and_delta_stamps():
    iso = kinds(parse("dmesg_iso.txt"), "kernel.segfault")[0]
    assert iso.stamp.wall.isoformat() == "2026-11-29T08:27:27.033694+00:00"
    ctime = kinds(parse("dmesg_T.txt"), "kernel.segfault")[0]
    assert ctime.stamp.wall.isoformat() == "2026-11-29T08:27:27" and ctime.stamp.year_known
    d = kinds(parse("dmesg_d.txt"), "kernel.segfault")[0]
    assert d.stamp.clock is ClockKind.BOOT and d.data["delta_s"] == pytest.approx(0.731083)
    h = parse("dmesg_H.txt")
    marker = [e for e in kinds(h, "kernel.line") if "postmortem-marker" in e.data.get("msg", "")][0]
    assert marker.stamp.clock is ClockKind.WALL_LOCAL and not marker.stamp.year_known
    assert (marker.stamp.wall.month, marker.stamp.wall.day, marker.stamp.wall.minute) == (11, 29, 28)
    assert kinds(h, "kernel.segfault")[0].stamp.clock is ClockKind.DELTA


# -- corpus ---------------------------------------------------------------------------------------

def test_xid79_fell_off_bus_with_continuations():
    # corpus xid79-fell-off-bus-01 (NVIDIA/nvidia-docker#1553)
    r = parse("corpus/xid79-fell-off-bus-01/dmesg.txt")
    (xid,) = kinds(r, "kernel.xid")
    assert xid.data["code"] == 79 and xid.data["pci"] == "0000:09:00" and xid.data["pid"] == 0
    assert xid.data["detail"] == "GPU has fallen off the bus." and xid.stamp.seconds == pytest.approx(1084456.074562)
    (fell,) = kinds(r, "kernel.fell_off_bus")
    assert fell.data["pci"] == "0000:09:00.0" and fell.severity is Severity.FATAL
    cont = [e for e in kinds(r, "kernel.line") if e.data.get("continuation")]
    assert [e.ref.line for e in cont] == [7, 8]
    assert cont[0].data["msg"].startswith("NVRM: nvidia-bug-report.sh")
    aer = kinds(r, "kernel.aer")
    assert [a.data["severity"] for a in aer] == ["Corrected", "Corrected"]
    assert aer[1].data["type"] == "Data Link Layer" and aer[0].data["source"] == "0000:00:00.0"


def test_pcie_aer_fatal_block_grouped():
    # corpus pcie-aer-fatal-01 (rwth-i6/returnn#1500), dmesg -H delta lines
    r = parse("corpus/pcie-aer-fatal-01/dmesg.txt")
    header = [a for a in kinds(r, "kernel.aer") if a.data.get("type")]
    assert len(header) == 1
    h = header[0]
    assert h.data["device"] == "0000:00:03.0" and h.data["severity"] == "Uncorrected (Fatal)"
    assert h.data["type"] == "Transaction Layer" and h.data["errors"] == ["SDES", "CmpltTO"]
    assert h.severity is Severity.FATAL and h.stamp.clock is ClockKind.DELTA
    bits = [e for e in kinds(r, "kernel.line") if "aer_bit" in e.data]
    assert [(b.data["aer_bit"], b.data["first"]) for b in bits] == [(5, False), (14, True)]
    assert len(kinds(r, "kernel.aer")) == 9  # every `AER:` line, incl. recovery failures


def test_oom_killer_global():
    # corpus oom-host-oomkiller-fsdp-01 (meta-llama/llama-cookbook#556), dmesg -T
    r = parse("corpus/oom-host-oomkiller-fsdp-01/dmesg.txt")
    (oom,) = kinds(r, "kernel.oom_kill")
    assert oom.pid == 7815 and oom.data["comm"] == "pt_main_thread" and oom.data["anon_rss_kb"] == 31360488
    assert oom.data["memcg"] is False and oom.stamp.wall.isoformat() == "2024-06-09T11:49:36"


def test_oom_killer_memcg_with_constraint_line():
    # LKML, Michal Hocko 2019-08-02 <20190802074047.GQ11627@dhcp22.suse.cz>
    r = parse("oom_memcg_lkml.txt")
    (oom,) = kinds(r, "kernel.oom_kill")
    assert oom.pid == 23793 and oom.data["comm"] == "leaker" and oom.data["memcg"] is True
    assert oom.data["constraint"] == "CONSTRAINT_MEMCG" and oom.data["anon_rss_kb"] == 506500


def test_hung_task():
    # netdev patch mail <20210809032809.1224002-1-acelan.kao@canonical.com>
    r = parse("hung_task_netdev.txt")
    (hung,) = kinds(r, "kernel.hung_task")
    assert (hung.data["comm"], hung.pid, hung.data["seconds"]) == ("ip", 6024, 120)


def test_journal_short_xid120_year_unknown():
    r = parse("journal_xid120_fedora.txt")
    (xid,) = kinds(r, "kernel.xid")
    assert xid.data["code"] == 120 and xid.host == "fedora" and xid.data["pci"] == "0000:23:00"
    assert xid.stamp.clock is ClockKind.WALL_LOCAL and not xid.stamp.year_known
    assert xid.stamp.wall.year == kernel.PLACEHOLDER_YEAR
    assert len(kinds(r, "kernel.nvrm")) == 4


def test_talos_kmsg_sxid_and_ip_host():
    # corpus nvlink-nvswitch-fault-01 (NVIDIA/open-gpu-kernel-modules#1118)
    r = parse("corpus/nvlink-nvswitch-fault-01/dmesg.txt")
    (sxid,) = kinds(r, "kernel.sxid")
    assert sxid.data["code"] == 24007 and sxid.data["device"] == "nvidia-nvswitch1"
    assert sxid.data["pci"] == "0000:aa:00.0" and sxid.data["severity"] == 1
    assert sxid.host == "192.168.11.119" and sxid.data["level"] == "err"
    assert sxid.stamp.clock is ClockKind.WALL and sxid.stamp.wall.isoformat() == "2026-04-22T21:25:20.466440+00:00"
    assert len(kinds(r, "kernel.nvrm")) == 11


def test_edac_and_apei_machine_checks():
    # corpus hw-host-dimm-mce-01 (ovro-lwa/lwa-issues#117)
    r = parse("corpus/hw-host-dimm-mce-01/dmesg.txt")
    mces = kinds(r, "kernel.mce")
    assert len(mces) == 14
    ue = mces[0]
    assert ue.data["source"] == "edac" and ue.data["corrected"] is False
    assert ue.data["dimm"] == "CPU_SrcID#1_MC#1_Chan#2_DIMM#0"
    assert {m.data["source"] for m in mces} == {"edac", "apei", "mce"}


def test_cmci_storm_in_dmesg_H():
    r = parse("corpus/hw-host-dimm-mce-01/dmesg_wH.txt")
    first = kinds(r, "kernel.mce")[0]
    assert first.data["corrected"] is True and first.stamp.clock is ClockKind.WALL_LOCAL
    assert (first.stamp.wall.month, first.stamp.wall.day, first.stamp.wall.hour) == (5, 19, 19)
    assert all(e.stamp.clock is ClockKind.DELTA for e in kinds(r, "kernel.mce")[1:])


def test_ipmi_sel_memory_error():
    r = parse("corpus/hw-host-dimm-mce-01/ipmi_sel.txt")
    (sel,) = kinds(r, "kernel.mce")
    assert sel.data["source"] == "ipmi" and sel.data["corrected"] is False
    assert sel.data["dimm"] == "P2-DIMMF1" and sel.data["asserted"] is True


@pytest.mark.parametrize("line,code,pid,comm", [
    # docs/formats.md §2.4 samples ([quoted in leptonai/gpud], gpud testdata, stas00/ml-engineering)
    ("NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", 79, None, None),
    ("NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response "
     "from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).", 119, 2024380, "nvidia-smi"),
    ("NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
     154, None, None),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
     63, 1896, None),
    ("NVRM: Xid (0000:03:00): 14, Channel 00000001", 14, None, None),
])
def test_xid_variants_from_formats_md(line, code, pid, comm):
    r = parse_text("x", [line])
    (xid,) = kinds(r, "kernel.xid")
    assert (xid.data["code"], xid.data["pid"], xid.data["comm"]) == (code, pid, comm)


def test_lines_of_other_formats_are_left_alone():
    lines = ["[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout",
             "[rank0]: Traceback (most recent call last):", "[0] NCCL INFO Using network IB",
             "INFO:megatron.core.datasets.gpt_dataset:> total number of samples: 640"]
    r = parse_text("x", lines)
    assert not [e for e in r.sink.events if e.kind.startswith("kernel.")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=120), st.sampled_from([
    "[  1.000000] NVRM: Xid (PCI:", "[  +0.1] ", "kern  :err   : [", "Jan  1 00:00:00 h kernel: ",
    "x: kern: warning: [2026-", "6,1,2,-;", "   continuation", "pcieport 0000:00:03.0:    [ 5] X",
    "[Sun Jan  1 00:00:00 2024] Out of memory: Killed process 1 (", "p[1]: segfault at ", " - Assertion"])),
    max_size=20))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("fuzz", lines)
    assert not [p for p in r.sink.problems if p.startswith("kernel ")]


def test_the_gate_is_a_necessary_condition_of_the_prefilter():
    """kernel.py builds PREFILTER, GATE_START and GATE_WORDS from one table: wherever the
    prefilter matches a real line, the gate lets that line through (else it would hide it)."""
    lines = [line for path in ALL_FIXTURES for line in path.read_text(errors="replace").splitlines()]
    passing = [line for line in lines if kernel.PREFILTER.search(line)]
    assert len(passing) > 150
    hidden = [line for line in passing if not (kernel.GATE_START.match(line) or kernel.GATE_WORDS.search(line))]
    assert not hidden, hidden[:5]
    # and the gate is cheap because it rejects: most lines of a training log fail it
    assert not kernel.GATE_WORDS.search("step 100 loss 2.31 lr 1e-4") and not kernel.GATE_START.match("step 100")


def test_a_refused_mlx5_firmware_command_is_no_rdma_fault():
    """audit 6 M7: mlx5_core logs every firmware command the firmware refused (cmd.c mlx5_cmd_out_err):
    here a monitoring agent's register query (leptonai/gpud#1164, verbatim) -- not a fault of the HCA."""
    r = parse_text("x", ["Dec 02 09:56:04 node1 kernel: mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1441871): "
                         "ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)"])
    assert not kinds(r, "kernel.ib")


def test_an_mlx5_health_failure_is_still_an_rdma_fault():
    # near miss: charmplusplus/charm#2635 (TACC Frontera), the firmware health poller giving up
    r = parse_text("x", ["[198542.853543] mlx5_core 0000:5e:00.0: device's health compromised - reached miss count"])
    (ib,) = kinds(r, "kernel.ib")
    assert ib.data["driver"] == "mlx5_core"
