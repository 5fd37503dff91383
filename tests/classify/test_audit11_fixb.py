"""Audit 11 fixes (h11-fixb).  M1: an errno that names no path is not "the path the job passed"
(signals.toml app.exception_argument_error path_named, path_errno_not_raised_in), and an ENOENT
from creating a multiprocessing semaphore is a /dev/shm that is not there
(shm.missing_in_shared_memory).  REAL: fixtures/lab/audit11/no-devshm (the auditor's probe run)
and fixtures/lab/output lab-rank-raises-ckpt (fixtures/lab/rank_raises.sh)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
NO_DEVSHM = ROOT / "fixtures/lab/audit11/no-devshm/bundle"
CKPT = ROOT / "fixtures/lab/output/lab-rank-raises-ckpt/console.log"


def test_a_semaphore_that_cannot_be_created_for_want_of_dev_shm_is_shared_memory_not_the_jobs_path():
    text = (NO_DEVSHM / "train.log").read_text(encoding="utf-8")
    assert "FileNotFoundError: [Errno 2] No such file or directory\n" in text and "synchronize.py" in text
    v = analyze(NO_DEVSHM).verdict
    assert (v.category, v.cause) == ("config", "shm_permissions")
    assert v.root.signal == "shm.missing_in_shared_memory"
    assert "synchronize.py" in v.root.summary and "/dev/shm" in v.root.summary
    assert not any(f.signal == "app.exception_argument_error" for f in (v.root, *v.alternatives, *v.symptoms))


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def test_the_same_enoent_without_the_semaphore_frames_is_no_shared_memory_reading(tmp_path):
    # Edited at test time: the probe's traceback with the two synchronize.py frames cut (the
    # exception then raised in multiprocessing/context.py): no semaphore was being created.
    lines = (NO_DEVSHM / "train.log").read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if "synchronize.py" in ln)
    last = next(i for i, ln in enumerate(lines) if ln.startswith("FileNotFoundError"))
    v = _verdict(tmp_path, "".join(lines[:first] + lines[last:]))
    assert v.cause != "shm_permissions"
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")


def test_an_enoent_that_names_no_path_is_not_the_jobs_path(tmp_path):
    # Edited at test time: torch.load's FileNotFoundError under the job's load_checkpoint with its
    # filename cut -- an errno without a name is a call whose name the job never chose.
    text = CKPT.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if "FileNotFoundError: [Errno 2] No such file or directory: '" in ln)
    v = _verdict(tmp_path, text.replace(line, line.split(": '", 1)[0]))
    assert v.cause != "app_error" or v.confidence < 0.35
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")
    # ... while the unedited line, naming the checkpoint path, is still the job's side
    assert analyze_text(tmp_path, text).root.signal == "app.exception_argument_error"


def analyze_text(tmp_path: Path, text: str):
    bundle = tmp_path / "unedited"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


# ---- L5: the kernel's silence weighs on the SIGKILL read as the kernel's OOM kill, not on what
# read the memory itself (a user-space killer -- systemd-oomd, earlyoom, the kubelet -- logs no
# kernel line).  REAL: fixtures/bundles/lab-flightrec-sigkill (whole kernel log, no OOM line) and the
# memory reading of fixtures/validation10/deepspeed-offload-host-oom-06 (deepspeedai/DeepSpeed#4571).
SIGKILL = ROOT / "fixtures/bundles/lab-flightrec-sigkill/bundle"
DEEPSPEED = ROOT / "fixtures/validation10/deepspeed-offload-host-oom-06/bundle"


def _findings(verdict):
    return [f for f in (verdict.root, *verdict.alternatives, *verdict.symptoms) if f is not None]


def test_the_kernels_silence_weighs_on_the_kernel_reading_only():
    from postmortem.classify.counter_evidence import kernel_log_without_oom_kill

    killed = analyze(SIGKILL)
    kernel_reading = [f for f in _findings(killed.verdict) if f.signal == "sigkill.exit"]
    memory = [f for f in _findings(analyze(DEEPSPEED).verdict) if f.signal == "memory.high_then_death"]
    assert len(kernel_reading) == 1 and len(memory) == 1
    trace: list[str] = []
    alone = kernel_log_without_oom_kill(killed.case, trace, kernel_reading)["host_oom"][0]
    both = kernel_log_without_oom_kill(killed.case, trace, kernel_reading + memory)["host_oom"][0]
    assert alone == 0.4
    # support 1-(1-.25)(1-.5) = .625 -> 1-(1-.1)(1-.5) = .55: the memory reading keeps its weight
    assert 0.85 < both < 0.9
    assert kernel_log_without_oom_kill(killed.case, trace, memory) == {}   # no kernel reading to weigh on


# ---- M2: the launcher's check of the rendezvous endpoint stays comms set-up (the project's label for
# a wrong master address) but speaks of the endpoint, never of IB/RoCE or interfaces (causes.toml
# nccl_network.by_reading).  REAL: fixtures/lab/audit11/rdzv-noport ('localhost:', MASTER_PORT unset),
# rdzv-nodelist (Slurm's 'node[01-02]'), fixtures/lab/comms_setup crlf_addr (a CR from a CRLF hostfile).
AUDIT11 = ROOT / "fixtures/lab/audit11"
_TRANSPORT_FIXES = ("NCCL_SOCKET_IFNAME", "NCCL_IB", "MOFED", "ACS", "ibv_devinfo", "IB/RoCE")


def _says_no_transport(v) -> None:
    text = " ".join((v.summary, v.title, v.explanation, *v.remediation, *v.commands, *v.steps))
    assert not any(t in text for t in _TRANSPORT_FIXES), text


def test_an_unset_port_in_the_rendezvous_endpoint_speaks_of_the_endpoint():
    assert "endpoint 'localhost:' must be an integer" in (AUDIT11 / "rdzv-noport/bundle/launch.log").read_text()
    v = analyze(AUDIT11 / "rdzv-noport/bundle").verdict
    assert (v.category.value, v.cause, v.root.signal) == ("comms", "nccl_network", "catalog.pt.rdzv_endpoint_bad_port")
    assert "port" in v.title and "MASTER_PORT" in v.remediation[0]
    _says_no_transport(v)


@pytest.mark.parametrize("bundle,hint", [(AUDIT11 / "rdzv-nodelist/bundle", "scontrol show hostnames"),
                                         (ROOT / "fixtures/lab/comms_setup/output/crlf_addr", "dos2unix")])
def test_a_host_no_name_can_be_speaks_of_the_endpoint(bundle, hint):
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause, v.root.signal) == ("comms", "nccl_network", "catalog.pt.rdzv_endpoint_bad_host")
    assert "host" in v.title and any(hint in r for r in v.remediation)
    _says_no_transport(v)


def test_any_other_network_reading_keeps_the_transport_wording():
    v = analyze(ROOT / "fixtures/lab/comms_setup/output/syn_drop").verdict
    assert v.cause == "nccl_network" and v.title.startswith("NCCL network transport failed")


# ---- H1, L3: c10d's per-attempt store lookups and connects are one weak sign whatever their errno,
# dropped when a later line of the same file shows the store was reached; their errno reads the cause
# only when the connect's own final failure follows (pytorch catalog errno_attempt_entries,
# store_reached_kinds, connect_failed_entries).  REAL: fixtures/lab/audit11 latename-healthy (both ranks
# exit 0), latename-peer-oom (rank 0 killed by its memory cgroup, rank 1 dies of gloo's reset);
# fixtures/lab/comms_setup bad_name (the name never resolves: the connect times out).
def test_a_retried_lookup_of_a_job_that_then_trained_and_exited_0_claims_nothing():
    assert (AUDIT11 / "latename-healthy/exits.txt").read_text().split() == ["rank0", "exit", "0", "rank1", "exit", "0"]
    v = analyze(AUDIT11 / "latename-healthy/bundle").verdict
    assert v.cause == "unknown" and v.confidence < 0.35
    assert "catalog: pt.store_addr_unresolved x4 -> nccl_network (0.25, subsystem), first at rank1.log:1" in v.trace


def test_a_retried_lookup_followed_by_a_gloo_pair_error_is_dropped_and_the_peers_oom_is_not_the_network():
    assert "Memory cgroup out of memory: Killed process" in (AUDIT11 / "latename-peer-oom/dmesg_tail.txt").read_text()
    v = analyze(AUDIT11 / "latename-peer-oom/bundle").verdict
    assert v.cause != "nccl_network" and v.category.value != "comms"
    assert any(t.startswith("catalog: pt.store_addr_unresolved on rank1.log:1 not counted") for t in v.trace)


def test_lookups_that_end_in_the_connects_timeout_still_read_the_name():
    v = analyze(ROOT / "fixtures/lab/comms_setup/output/bad_name").verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network")
    assert any("ended in the connect's final failure" in t for t in v.trace)
    assert v.root.signal == "catalog.pt.store_addr_unresolved" and v.root.strength == "strong"


def test_the_store_name_is_read_from_the_lines_that_end_a_connect_only():
    from postmortem.classify.rules.peer_path import _store_names
    from postmortem.knowledge.registry import SIGN
    import re

    pattern = re.compile(SIGN.net_name_resolves_apart.params["store_host"])
    healthy = analyze(AUDIT11 / "latename-healthy/bundle").case
    assert _store_names(healthy, pattern) == {}   # 'network addresses of (trainer-0, ...)': an attempt
    failed = analyze(ROOT / "fixtures/lab/comms_setup/output/bad_name").case
    assert list(_store_names(failed, pattern)) == ["trainer-0.invalid"]
    assert "trying to connect to" in _store_names(failed, pattern)["trainer-0.invalid"].text
