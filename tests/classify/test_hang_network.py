"""Hangs and timeouts read by what the ranks were doing, and network faults that show only as
timeouts or failed gloo connects (issue 13).  Lines are the real ones from the dev fixtures
(fixtures/validation21, run here or quoted from public reports) or gloo/c10d's format strings."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

V21 = Path(__file__).resolve().parents[2] / "fixtures" / "validation21"


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text, encoding="utf-8")
    return bundle


def _verdict(tmp_path: Path, files: dict[str, str]):
    return analyze(_bundle(tmp_path, files)).verdict


# --- gloo ------------------------------------------------------------------------------------

# lab3-vocab-size-desync-fr/bundle/torchrun.log lines 7-8 (torch 2.13.0, gloo pair.cc:456)
_GLOO_MISMATCH = (
    "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
    "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
    "op.preamble.length <= op.nbytes. 1988 vs 1540. Received data size doesn't match expected size. "
    "Is there a distributed collective mismatch in your code?\n"
    "Fatal Python error: Aborted\n")
# the peer's fallout in the same log (line 28)
_PEER_RESET = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] "
               "Read error [127.0.0.1]:23984: Connection reset by peer. This is typically caused by a remote "
               "worker hanging or bugs in the application.\n")


def test_gloo_size_mismatch_in_a_terminate_report_is_a_desync_and_explains_the_peers_reset(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _GLOO_MISMATCH + _PEER_RESET})
    assert v.cause == "collective_desync", v.trace
    assert v.confidence >= 0.5


def test_the_peers_reset_alone_does_not_claim_a_desync(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _PEER_RESET})
    assert v.cause != "collective_desync"


# lab3-gloo-ifname-storage-net/bundle/node1.log (GLOO_SOCKET_IFNAME on an unrouted segment)
_NO_ROUTE = ("[E1201 16:43:09.660246579 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
             "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
             "SO_ERROR: No route to host, remote=[10.94.0.1]:11663$1\n")
_REFUSED = ("[E1201 16:43:09.660246579 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
            "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
            "SO_ERROR: Connection refused, remote=[10.94.0.1]:11663$1\n")
# eks-lws-vllm-two-node-gloo-loopback-no-socket-ifname-08/bundle/stderr.txt line 1 (public report)
_LOOPBACK = ("[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback\n"
             "        address as fallback. Manually set the network interface with GLOO_SOCKET_IFNAME\n")


def test_gloo_connect_with_no_route_is_the_network(tmp_path):
    v = _verdict(tmp_path, {"node1.log": _NO_ROUTE})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_a_refused_gloo_connect_alone_only_leans_to_the_network(tmp_path):
    # refused: nothing listened (a peer gone, or bound elsewhere): one weak sign, no claim
    v = _verdict(tmp_path, {"node1.log": _REFUSED})
    assert v.cause == "unknown", v.trace


def test_loopback_fallback_beside_a_failed_gloo_connect_is_the_network(tmp_path):
    v = _verdict(tmp_path, {"stderr.txt": _LOOPBACK + _REFUSED})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_loopback_fallback_alone_claims_nothing(tmp_path):
    # printed by every single-host job whose host name does not resolve: harmless there
    v = _verdict(tmp_path, {"stderr.txt": _LOOPBACK})
    assert v.cause == "unknown", v.trace


# --- where the ranks stood when the job hung ---------------------------------------------------

# lab3-uneven-shards-barrier-hang/bundle/torchrun.log (torch 2.13.0 gloo; rank 0 ran out of data)
def _timeout_tb(rank: int, frames: list[tuple[str, int, str, str]], timeout_ms: int = 45000) -> str:
    lines = [f"[rank{rank}]: Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines += [f'[rank{rank}]:   File "{path}", line {line}, in {func}', f"[rank{rank}]:     {code}"]
    lines.append(f"[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                 f"Timed out waiting {timeout_ms}ms for recv operation to complete")
    return "\n".join(lines) + "\n"


_SITE = "/work/torchvenv/lib/python3.11/site-packages/torch"
_PROG = "/work/blind3/lab/programs/train_stream.py"
_IN_BACKWARD = [(_PROG, 41, "<module>", "main()"), (_PROG, 30, "main", "opt.zero_grad(); loss.backward(); opt.step()"),
                (f"{_SITE}/_tensor.py", 623, "backward", "torch.autograd.backward("),
                (f"{_SITE}/autograd/__init__.py", 395, "backward", "_engine_run_backward("),
                (f"{_SITE}/autograd/graph.py", 979, "_engine_run_backward", "return Variable._execution_engine.run_backward(")]
_IN_BARRIER = [(_PROG, 41, "<module>", "main()"), (_PROG, 35, "main", "dist.barrier()"),
               (f"{_SITE}/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
               (f"{_SITE}/distributed/distributed_c10d.py", 5356, "barrier", "work.wait()")]
_IN_ALL_REDUCE = [(_PROG, 41, "<module>", "main()"), (_PROG, 30, "main", "dist.all_reduce(t)"),
                  (f"{_SITE}/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
                  (f"{_SITE}/distributed/distributed_c10d.py", 3252, "all_reduce", "work.wait()")]


def test_ranks_timing_out_in_different_collectives_are_a_desync(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _timeout_tb(1, _IN_BACKWARD) + _timeout_tb(0, _IN_BARRIER)})
    assert v.cause == "collective_desync", v.trace
    assert any("stacks-at-timeout" in t and "barrier" in t for t in v.trace)


def test_ranks_timing_out_in_the_same_collective_are_no_desync(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _timeout_tb(1, _IN_ALL_REDUCE) + _timeout_tb(0, _IN_ALL_REDUCE)})
    assert v.cause != "collective_desync", v.trace


# lab3-val-tokenize-straggler/bundle/py-spy-rank{0,1}.txt (py-spy 0.4 dump of two mp.spawn ranks)
_PYSPY_HEAD = ("Process {pid}: /work/torchvenv/bin/python -B -c from multiprocessing.spawn import spawn_main; "
               "spawn_main(tracker_fd=4, pipe_handle=6) --multiprocessing-fork\n"
               "Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)\n\n")
_SPAWN_TAIL = ("    _wrap (torch/multiprocessing/spawn.py:87)\n"
               "    BaseProcess.run (multiprocessing/process.py:108)\n"
               "    BaseProcess._bootstrap (multiprocessing/process.py:314)\n"
               "    _main (multiprocessing/spawn.py:135)\n"
               "    spawn_main (multiprocessing/spawn.py:122)\n"
               "    <module> (<string>:1)\n")
_RANK0_TOKENIZING = (_PYSPY_HEAD.format(pid=29537) + 'Thread 29537 ({status}): "MainThread"\n'
                     "    bpe_tokenize (train_seq2seq.py:18)\n    worker (train_seq2seq.py:46)\n" + _SPAWN_TAIL)
_RANK1_WAITING = (_PYSPY_HEAD.format(pid=29538) + 'Thread 29538 (idle): "MainThread"\n'
                  "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
                  "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)\n"
                  "    worker (train_seq2seq.py:50)\n" + _SPAWN_TAIL)
_RANK1_TIMEOUT = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] "
                  "Timed out waiting 25000ms for send operation to complete\n")


def test_a_running_rank_outside_collectives_while_another_waits_is_the_straggler(tmp_path):
    v = _verdict(tmp_path, {"py-spy-rank0.txt": _RANK0_TOKENIZING.format(status="active+gil"),
                            "py-spy-rank1.txt": _RANK1_WAITING, "train.log": _RANK1_TIMEOUT})
    assert v.cause == "straggler_timeout", v.trace
    assert any("rank(s) 0 were running" in t or "rank 0 was running" in t for t in v.trace), v.trace


def test_an_idle_rank_outside_collectives_is_only_a_weak_sign(tmp_path):
    strong = _verdict(tmp_path / "a", {"py-spy-rank0.txt": _RANK0_TOKENIZING.format(status="active+gil"),
                                       "py-spy-rank1.txt": _RANK1_WAITING, "train.log": _RANK1_TIMEOUT})
    weak = _verdict(tmp_path / "b", {"py-spy-rank0.txt": _RANK0_TOKENIZING.format(status="idle"),
                                     "py-spy-rank1.txt": _RANK1_WAITING, "train.log": _RANK1_TIMEOUT})
    assert weak.confidence < strong.confidence


def test_dumps_without_any_timeout_are_a_snapshot_not_a_hang(tmp_path):
    v = _verdict(tmp_path, {"py-spy-rank0.txt": _RANK0_TOKENIZING.format(status="active+gil"),
                            "py-spy-rank1.txt": _RANK1_WAITING})
    assert v.cause != "straggler_timeout", v.trace


# --- network faults that show only as timeouts --------------------------------------------------

SYSTEM = Path(__file__).resolve().parents[2] / "fixtures" / "system"
# lab3-switch-port-down/bundle/node0.log line 22 (torch 2.13.0 gloo): every rank timed out alike
_ALL_TIMED_OUT = {
    "node0.log": "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                 "Timed out waiting 30000ms for recv operation to complete\n",
    "node1.log": "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                 "Timed out waiting 30000ms for recv operation to complete\n",
}
# lab3-switch-port-down/bundle/dmesg.txt (net/bridge/br_stp.c br_log_state)
_PORT_DISABLED = "[Tue Dec  1 16:42:03 2026] br0: port 2(swp2) entered disabled state\n"


def _ip(name: str) -> str:
    return (SYSTEM / name).read_text(encoding="utf-8")


def test_timeouts_on_every_rank_alone_only_lean_to_a_timeout(tmp_path):
    # every rank timed out in one collective (timeout.all_ranks): one weak sign -- a stuck path,
    # a hung GPU or a rank missing from the bundle all give it -- so unknown, leaning the timeout
    v = _verdict(tmp_path, dict(_ALL_TIMED_OUT))
    assert v.cause == "unknown" and "leaning nccl_timeout" in v.summary, v.trace


def test_timeouts_beside_an_interface_without_carrier_only_lean_to_the_network(tmp_path):
    # the timeouts are the symptom the interface would explain, not a second sign: one weak
    # interface observation (not shown to be the job's) is a lean, not a claim
    v = _verdict(tmp_path, {**_ALL_TIMED_OUT, "ip_addr.txt": _ip("ip_addr_nocarrier.txt")})
    assert v.cause != "nccl_network", v.trace
    assert any("interface pma had no link" in t for t in v.trace)


def test_a_down_interface_that_is_administratively_down_is_no_sign(tmp_path):
    # pmb is not UP: nobody meant it to carry traffic
    text = "\n".join(line for line in _ip("ip_addr_nocarrier.txt").splitlines() if "pma" not in line) + "\n"
    v = _verdict(tmp_path, {**_ALL_TIMED_OUT, "ip_addr.txt": text})
    assert v.cause == "unknown" and "leaning nccl_timeout" in v.summary, v.trace
    assert not any("interface-faults" in t for t in v.trace)


def test_a_link_down_in_the_kernel_log_with_no_carrier_measured_is_the_network(tmp_path):
    v = _verdict(tmp_path, {**_ALL_TIMED_OUT, "dmesg.txt": _PORT_DISABLED, "ip_br.txt": _ip("ip_br_addr_nocarrier.txt")})
    assert v.cause == "nccl_network", v.trace


def test_a_bridge_port_going_to_forwarding_is_no_fault(tmp_path):
    v = _verdict(tmp_path, {**_ALL_TIMED_OUT, "dmesg.txt": _PORT_DISABLED.replace("disabled", "forwarding")})
    assert v.cause == "unknown" and "leaning nccl_timeout" in v.summary, v.trace   # no network sign


def test_loopback_is_never_the_job_s_link(tmp_path):
    lo_down = "1: lo: <LOOPBACK,UP> mtu 65536 qdisc noqueue state DOWN group default qlen 1000\n"
    v = _verdict(tmp_path, {**_ALL_TIMED_OUT, "ip_addr.txt": lo_down})
    assert v.cause == "unknown" and "leaning nccl_timeout" in v.summary, v.trace   # no network sign


def test_spawn_s_wrapper_of_a_child_s_timeout_is_no_death_of_its_own(tmp_path):
    # lab3-val-tokenize-straggler/bundle/train.log: mp.spawn's parent re-raises rank 1's gloo
    # timeout as ProcessRaisedException; only the child's exception says what happened
    log = (V21 / "lab3-val-tokenize-straggler" / "bundle" / "train.log").read_text(encoding="utf-8")
    start = log.index("Traceback (most recent call last):")
    v = _verdict(tmp_path, {"train.log": log[start:]})
    assert not any("died of" in t and "ProcessRaisedException" in t for t in v.trace), v.trace
    assert any("timeout.no_transport_error" in t for t in v.trace), v.trace


# Rank 0's dump in a barrier: _RANK1_WAITING with its innermost c10d frame swapped for the
# barrier's (distributed_c10d.py:5356, the line _IN_BARRIER cites) -- built here, marked as such.
_RANK0_IN_BARRIER = (_RANK1_WAITING.replace("29538", "29537")
                     .replace("all_reduce (torch/distributed/distributed_c10d.py:3252)",
                              "barrier (torch/distributed/distributed_c10d.py:5356)"))
# messages.toml watchdog_timeout sample (a real PyTorch 1.x ProcessGroupNCCL line)
_NCCL_WATCHDOG = ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                  "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                  "1800572 milliseconds before timing out.\n")


def test_dumps_in_different_collectives_claim_a_desync_under_gloo_but_only_lean_under_nccl(tmp_path):
    # gloo blocks in the call that waits; NCCL returns at once and a rank blocks wherever it next
    # synchronises, so the same two dumps are a strong sign under gloo and a weak one under NCCL
    dumps = {"py-spy-rank0.txt": _RANK0_IN_BARRIER, "py-spy-rank1.txt": _RANK1_WAITING}
    gloo = _verdict(tmp_path / "gloo", {**dumps, "train.log": _RANK1_TIMEOUT})
    nccl = _verdict(tmp_path / "nccl", {**dumps, "train.log": _NCCL_WATCHDOG})
    assert gloo.cause == "collective_desync", gloo.trace
    assert nccl.cause != "collective_desync", nccl.trace
    assert any("different collectives" in t for t in nccl.trace) or any("barrier" in t for t in nccl.trace), nccl.trace
