"""Audit 8 HIGH findings taken by h8-fixer2, each with the real lines that were over-claimed and
a near miss.  Real lines come from the fixtures named beside them (their SOURCE.md says how each
was made); bundles are arranged at test time from those files."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES, ROOT, analyze_files as _bundle, read as _read  # noqa: F401


# ---------------------------------------------------------------- H1: the handler's exception is fallout

_CHAIN = FIXTURES / "pytrace/handler_chain"


def test_an_exception_raised_in_the_handler_is_not_the_failure(tmp_path):
    # real run (train2.py): gloo cannot find the interface, the except: block's dist.get_rank() raises ValueError
    a = _bundle(tmp_path, {"train.log": _read(_CHAIN / "train2.log")})
    assert (a.verdict.category, a.verdict.cause) == ("comms", "nccl_network"), (a.verdict.cause, a.verdict.trace)
    assert not any("died of ValueError" in t for t in a.verdict.trace), a.verdict.trace


def test_an_exception_raised_in_a_finally_block_is_not_the_failure(tmp_path):
    # real run (train.py): the same failure, then finally: destroy_process_group() raises AssertionError
    a = _bundle(tmp_path, {"train.log": _read(_CHAIN / "train.log")})
    assert a.verdict.cause == "nccl_network", (a.verdict.cause, a.verdict.trace)


def test_the_same_exception_uncaught_is_the_jobs_failure_read_once(tmp_path):
    # near miss (no_init.py): the same ValueError with no failure before it is the job's own code --
    # one exception, one sign: the catalog's torch message and app-error do not both count it
    a = _bundle(tmp_path, {"train.log": _read(_CHAIN / "no_init.log")})
    assert (a.verdict.category, a.verdict.cause) == ("config", "app_error"), (a.verdict.cause, a.verdict.trace)
    assert a.verdict.confidence <= 0.7 + 1e-9, a.verdict.confidence


# ---------------------------------------------------------------- H4: another group's freezer state

_STP = FIXTURES / "validation24/lab-a/lab6-stp-port-relearn-after-flap/bundle"     # truth comms nccl_timeout
_FREEZER_PS = FIXTURES / "validation23/lab-c/lab5-node1-container-paused-freezer/bundle"   # truth: node 1 frozen


def _with(tmp_path: Path, case: Path, extra: dict[str, str]):
    files = {p.name: _read(p) for p in case.iterdir() if p.is_file()}
    return _bundle(tmp_path, {**files, **extra})


def test_a_frozen_group_beside_a_thawed_one_is_not_taken_as_the_jobs(tmp_path):
    # audit 8 probe c1: the STP relearn lab bundle + a real listing where the job's group is THAWED and
    # another tenant's FROZEN (fixtures/cgroup_state/two_groups)
    listing = _read(FIXTURES / "cgroup_state/two_groups/freezer_states.txt")
    a = _with(tmp_path, _STP, {"node1_freezer.txt": listing})
    assert a.verdict.cause != "straggler_timeout", (a.verdict.cause, a.verdict.trace)
    assert any("which is the job's is not known" in t for t in a.verdict.trace), a.verdict.trace


def test_one_frozen_group_listed_alone_stays_the_jobs(tmp_path):
    # near miss: the freezer lab's own `cat .../pm5c-node1/freezer.state` FROZEN and ps rows: still read
    a = analyze(_FREEZER_PS)
    assert a.verdict.cause == "straggler_timeout", (a.verdict.cause, a.verdict.trace)


# ---------------------------------------------------------------- H5: the remote service under a Dataset failed

_SERVICE = FIXTURES / "pytrace/remote_service"


def test_a_gateways_503_in_the_dataset_is_not_the_jobs_data(tmp_path):
    # real run: the Dataset's urlopen() gets 503 Service Unavailable from its object-store gateway
    for log in ("train_w0.log", "train_w2.log"):
        a = _bundle(tmp_path / log, {"train.log": _read(_SERVICE / log)})
        assert a.verdict.cause != "app_error", (log, a.verdict.summary)
        assert a.verdict.category == "unknown", (log, a.verdict.trace)
        assert any("remote service's failure" in t for t in a.verdict.trace), a.verdict.trace


def test_the_datasets_own_exception_stays_the_jobs(tmp_path):
    # near miss: an exception raised through the same fetch() by the job's own data (validation24
    # lab6-ragged-reviews-default-collate: default_collate on ragged samples) stays app_error
    case = FIXTURES / "validation24/lab-c/lab6-ragged-reviews-default-collate/bundle"
    a = analyze(case)
    assert a.verdict.cause == "app_error", (a.verdict.cause, a.verdict.trace)


# ---------------------------------------------------------------- H6: EPIPE on a socket or a child's pipe

_EPIPE = FIXTURES / "pytrace/peer_end_epipe"


def test_epipe_on_the_jobs_socket_to_a_dead_peer_is_no_claim_on_its_code(tmp_path):
    # real run: sock.sendall() to the pipeline peer that was SIGKILLed
    a = _bundle(tmp_path, {"train.log": _read(_EPIPE / "sock/train.log")})
    assert a.verdict.cause != "app_error", (a.verdict.cause, a.verdict.summary)
    assert not any("died of BrokenPipeError" in t for t in a.verdict.trace), a.verdict.trace


def test_epipe_into_an_oom_killed_child_is_the_oom_kill(tmp_path):
    # real run: proc.stdin.write() into the job's decoder child, which the memcg OOM killer killed (kernel lines)
    a = _bundle(tmp_path, {"train.log": _read(_EPIPE / "child/train.log"),
                           "dmesg.txt": _read(_EPIPE / "child/dmesg_tail.txt")})
    assert a.verdict.cause == "host_oom", (a.verdict.cause, a.verdict.trace)
    assert not any("the job died otherwise" in t for t in a.verdict.trace), a.verdict.trace


def test_epipe_of_a_print_into_a_closed_console_pipe_stays_the_jobs_side():
    # near miss: validation24 lab6-console-piped-to-head-brokenpipe, print() into `| head` (its own output)
    a = analyze(FIXTURES / "validation24/lab-c/lab6-console-piped-to-head-brokenpipe/bundle")
    assert a.verdict.cause == "app_error", (a.verdict.cause, a.verdict.trace)


# ---------------------------------------------------------------- H8: a snapshot counter beside an untimed failure

def _a100_table_with_one_uncorrected_ecc() -> str:
    # fixtures/system/public/smi_table_580_a100.txt with ONE cell edited at test time (marked: not real), the
    # same edit tests/classify/test_rules.py makes: a "Volatile Uncorr. ECC" 0 -> 1
    import re
    rows = (FIXTURES / "system/public/smi_table_580_a100.txt").read_text(encoding="utf-8").splitlines()
    i = next(n for n, line in enumerate(rows) if re.search(r"\|\s+0\s+\|\s*$", line))
    rows[i] = re.sub(r"\|(\s+)0(\s+\|\s*)$", r"|\g<1>1\g<2>", rows[i])
    return "\n".join(rows) + "\n"


def test_a_snapshot_ecc_count_does_not_take_the_root_from_an_untimed_own_exception(tmp_path):
    # audit 8 probe t1: a real plain-Python IndexError (no time on any line) + an nvidia-smi table counting 1 ECC
    log = _read(FIXTURES / "pytrace/untimed_own_error/train.log")
    a = _bundle(tmp_path, {"train.log": log, "nvidia_smi.txt": _a100_table_with_one_uncorrected_ecc()})
    assert a.verdict.cause == "app_error", (a.verdict.cause, a.verdict.trace)
    assert any("reads no line of a failure" in t for t in a.verdict.trace), a.verdict.trace


def test_the_snapshot_alone_still_reads_the_gpu(tmp_path):
    # near miss: the same table without the job's failure: the ECC count is still read (a lean or a claim)
    a = _bundle(tmp_path, {"nvidia_smi.txt": _a100_table_with_one_uncorrected_ecc()})
    assert any("gpu_memory_ecc" in t for t in a.verdict.trace), a.verdict.trace


# ---------------------------------------------------------------- H9: errno of a terminal, a VM's floppy

_TERM = FIXTURES / "pytrace/terminal_errno"


def test_eio_of_print_to_a_hung_up_terminal_is_no_storage_fault(tmp_path):
    # real run (print() after the pty hung up) + a VM's floppy lines (public): no storage claim, no storage lean
    for name, kernel in (("dmesg.txt", "fd0_esxi_dmesg.txt"), ("messages", "fd0_opensuse_messages.txt")):
        a = _bundle(tmp_path / name, {"train.log": _read(_TERM / "eio/train.log"), name: _read(_TERM / kernel)})
        assert a.verdict.cause != "storage_io_error" and a.verdict.category != "hardware", (name, a.verdict.trace)
        assert not any("storage_io_error" in t for t in a.verdict.trace if t.startswith("resolve:")), a.verdict.trace


def test_enxio_of_open_dev_tty_is_no_storage_fault(tmp_path):
    # real run (open('/dev/tty') with no controlling terminal) + the opensuse floppy lines
    a = _bundle(tmp_path, {"train.log": _read(_TERM / "enxio/train.log"),
                           "messages": _read(_TERM / "fd0_opensuse_messages.txt")})
    assert a.verdict.category != "hardware", a.verdict.trace
    assert not any("storage_io_error" in t for t in a.verdict.trace if t.startswith("resolve:")), a.verdict.trace


# ---------------------------------------------------------------- H10: a filter's counts that are not the job's

_STORE = FIXTURES / "pytrace/store_unreachable_firewall"
_PORT_DROP = FIXTURES / "validation25/lab-c/lab7-node0-master-port-closed-midrun-eval-group/bundle/node0_iptables.txt"


def test_an_input_policy_count_is_not_the_jobs_tcp(tmp_path):
    # audit 8 probe f1: real c10d client timeout + a real INPUT policy DROP that counted only UDP to 514
    a = _bundle(tmp_path, {"rank1.log": _read(_STORE / "rank1.log"),
                           "iptables.txt": _read(_STORE / "ipt_input_policy_drop_udp_only.txt")})
    assert a.verdict.category == "unknown", (a.verdict.cause, a.verdict.trace)
    assert any("of any protocol from anywhere" in t for t in a.verdict.trace), a.verdict.trace


def test_a_drop_rule_for_another_port_is_not_the_jobs_path(tmp_path):
    # the same client (port 29511) beside the lab7 bundle's real 'DROP tcp dpt:30060' rule (27 packets)
    a = _bundle(tmp_path, {"rank1.log": _read(_STORE / "rank1.log"), "iptables.txt": _read(_PORT_DROP)})
    assert not any(t.startswith("firewall-discards: chain") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.category == "unknown", a.verdict.trace


def test_a_routers_forward_policy_and_a_matching_reject_still_count():
    # near misses: validation24 lab6-router-docker-forward-drop (FORWARD policy DROP on the path's router) and
    # validation22 lab4-store-port-rejected (a REJECT of every SYN, the job's store connect timing out)
    for case in ("validation24/lab-b/lab6-router-docker-forward-drop", "validation22/lab4-store-port-rejected"):
        v = analyze(FIXTURES / case / "bundle").verdict
        assert v.cause == "nccl_network", (case, v.trace)
        assert any(t.startswith("firewall-discards: chain") for t in v.trace), (case, v.trace)


# ---------------------------------------------------------------- H11: a survivor's exit record is no death of its own

_OOM_PEER = FIXTURES / "launcher/oom_killed_peer"


def test_a_survivors_exit_record_does_not_deny_the_oom_kill_of_its_peer(tmp_path):
    # audit 8 probe k4: node 0's log (gloo 'Connection closed by peer', torchrun 'failed (exitcode: 1)') + the
    # kernel lines of the node where rank 1 was OOM-killed
    a = _bundle(tmp_path, {"node0.log": _read(_OOM_PEER / "node0.log"), "dmesg_T.txt": _read(_OOM_PEER / "dmesg_T.txt")})
    assert not any("the job died otherwise" in t for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "host_oom", (a.verdict.cause, a.verdict.trace)


def test_with_the_killed_ranks_log_too_the_oom_kill_stays_the_root(tmp_path):
    # near miss (probe k0): all three files
    a = _bundle(tmp_path, {name: _read(_OOM_PEER / name) for name in ("node0.log", "node1.log", "dmesg_T.txt")})
    assert a.verdict.cause == "host_oom", (a.verdict.cause, a.verdict.trace)


def test_a_network_failure_beside_another_days_oom_kill_stays_the_network(tmp_path):
    # near miss (arranged from real files): validation22 lab4-store-port-rejected (survivors' exit records, truth
    # comms) + the same two kernel lines, stamped hours after that run: no death mismatch needed to keep the network
    case = FIXTURES / "validation22/lab4-store-port-rejected/bundle"
    a = _with(tmp_path, case, {"dmesg_k.txt": _read(_OOM_PEER / "dmesg_T.txt")})
    assert a.verdict.cause == "nccl_network", (a.verdict.cause, a.verdict.trace)


# ---------------------------------------------------------------- M1: another group's pids refusals

_PIDS = FIXTURES / "cgroup_state/pids_two_groups"


def test_another_groups_pids_refusal_is_not_the_jobs(tmp_path):
    # audit 8 probe e8: a real libgomp EAGAIN + a real listing where the job's group refused nothing and a CI
    # runner's group refused one fork
    a = _bundle(tmp_path, {"job.log": _read(_PIDS / "run_ulimit_v.log"), "pids_listing.txt": _read(_PIDS / "pids_listing.txt")})
    assert a.verdict.category == "unknown", (a.verdict.cause, a.verdict.trace)
    assert any("not shown to be the job's" in t for t in a.verdict.trace), a.verdict.trace


def test_the_jobs_own_pids_refusals_still_pair_with_its_eagain():
    # near miss: validation23 lab5-container-pids-limit-omp-threads (its own group's pids files)
    v = analyze(FIXTURES / "validation23/lab-c/lab5-container-pids-limit-omp-threads/bundle").verdict
    assert v.cause == "app_error", v.trace
    assert any("independent weak signs" in t and "limits.pids_refused" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- M5: NOTHING_TO_DO beside SystemNotReady

_FM = FIXTURES / "system/public/fm_nothing_to_do_nvlink5"


def test_nothing_to_do_beside_system_not_ready_is_no_host_without_nvswitch(tmp_path):
    # audit 8 probe n1: gpu-burn#92's cudaErrorSystemNotReady + gpu-operator#610's NOTHING_TO_DO journal lines
    a = _bundle(tmp_path, {"gpu_burn.log": _read(_FM / "gpu_burn.log"),
                           "fabricmanager_journal.txt": _read(_FM / "fabricmanager_journal.txt")})
    assert a.verdict.cause == "nvls_fabric", (a.verdict.cause, a.verdict.trace)
    assert not any("the host has no NVSwitch fabric" in t for t in a.verdict.trace), a.verdict.trace


def test_nothing_to_do_alone_still_says_no_nvswitch(tmp_path):
    # near miss: the journal lines alone (a host without NVSwitch): no fabric failure claimed
    a = _bundle(tmp_path, {"fabricmanager_journal.txt": _read(_FM / "fabricmanager_journal.txt")})
    assert a.verdict.cause != "nvls_fabric", a.verdict.trace


# ---------------------------------------------------------------- M4: a redundant port STP blocks

_STP_UPLINK = FIXTURES / "system/stp_redundant_uplink"


def test_a_blocking_redundant_port_is_no_path_loss(tmp_path):
    # audit 8 probe s1: a real gloo desync + a real bridge whose second uplink STP blocks while the first forwards
    a = _bundle(tmp_path, {"torchrun.log": _read(_STP_UPLINK / "desync/torchrun.log"),
                           "bridge_link.txt": _read(_STP_UPLINK / "bridge_d_link.txt"),
                           "bridge_fdb.txt": _read(_STP_UPLINK / "bridge_fdb.txt")})
    assert any("a redundant path" in t for t in a.verdict.trace), a.verdict.trace
    assert not any(t.startswith("path-discards: switch port") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "collective_desync", a.verdict.trace
