"""Root versus cascade: which of several present causes is the root, which signs are its
fallout, and which are someone else's history.

Each bundle here is written at test time from the real sample lines of
knowledge/messages.toml (each sample is a line quoted from a public report or made here),
with timestamps added so that the ORDER is the variable under test.  They are
synthetic arrangements of real lines, not fixtures, and say so.
"""
from pathlib import Path

from postmortem import knowledge
from postmortem.run import analyze

K = knowledge.load()
SAMPLE = {m.id: m.sample for m in K.messages}


def bundle(tmp_path: Path, files: dict[str, list[tuple[str, str]]]) -> Path:
    """files: name -> [(stamp, line)]; a stamp "" writes the line as is."""
    root = tmp_path / "bundle"
    root.mkdir()
    for name, lines in files.items():
        text = "".join(f"[{stamp}] {line}\n" if stamp else f"{line}\n" for stamp, line in lines)
        (root / name).write_text(text, encoding="utf-8")
    return root


def causes_of(findings) -> set[str]:
    return {f.cause for f in findings}


def _two_close_causes(tmp_path, first: str, second: str):
    return analyze(bundle(tmp_path, {"train.log": [
        ("2026-04-22 21:34:20", "step 10 loss 2.31"),
        ("2026-04-22 21:34:25", SAMPLE[first]),
        ("2026-04-22 21:34:40", SAMPLE[second]),
    ]})).verdict


def test_of_two_close_causes_the_earlier_is_the_root(tmp_path):
    # An open-files limit (fd_limit) and a CUDA OOM (gpu_oom): neither explains the other,
    # support within a few percent; the CUDA OOM is the slightly stronger one.
    v = _two_close_causes(tmp_path, "too_many_open_files", "cuda_oom")
    assert v.cause == "fd_limit"
    assert any("happened before" in t for t in v.trace)


def test_the_same_two_causes_in_the_other_order_swap_root(tmp_path):
    v = _two_close_causes(tmp_path, "cuda_oom", "too_many_open_files")
    assert v.cause == "gpu_oom"


def test_a_cause_whose_signs_come_after_the_root_is_a_symptom_not_an_alternative(tmp_path):
    v = _two_close_causes(tmp_path, "too_many_open_files", "cuda_oom")
    assert "gpu_oom" in causes_of(v.symptoms)
    assert "gpu_oom" not in causes_of(v.alternatives)


def test_fallout_printed_first_is_still_explained_by_its_cause(tmp_path):
    # The peer's socket error is printed before the rank's own /dev/shm failure (another
    # process, another buffer): shm_exhausted explains nccl_network, so time order does
    # not make the network the root.
    v = analyze(bundle(tmp_path, {"train.log": [
        ("2026-04-22 21:34:20", "step 10 loss 2.31"),
        ("2026-04-22 21:34:21", SAMPLE["nccl_socket_connect_failed"]),
        ("2026-04-22 21:34:23", SAMPLE["nccl_shm_enospc"].split("] ", 1)[1]),
    ]})).verdict
    assert v.cause == "shm_exhausted"
    assert any("is explained by shm_exhausted" in t for t in v.trace)
    assert "nccl_network" in causes_of(v.symptoms)


def test_an_oom_kill_hours_before_the_job_is_history_not_the_root(tmp_path):
    # dmesg -T keeps the whole boot: the OOM kill at 11:49 is two hours older than the job.
    v = analyze(bundle(tmp_path, {
        "dmesg.txt": [("", SAMPLE["oom_killer"])],
        "train.log": [("2024-06-09 13:50:00", "step 10 loss 2.31"),
                      ("2024-06-09 13:50:05", SAMPLE["torch_shm_write_failed"])],
    })).verdict
    assert v.cause == "shm_exhausted"
    assert any("older than the job's first log line" in t for t in v.trace)


def test_the_same_oom_kill_during_the_job_is_the_root(tmp_path):
    # Control for the test above: with the job running at the time, the kill comes first.
    v = analyze(bundle(tmp_path, {
        "dmesg.txt": [("", SAMPLE["oom_killer"])],
        "train.log": [("2024-06-09 11:49:30", "step 10 loss 2.31"),
                      ("2024-06-09 11:49:40", SAMPLE["torch_shm_write_failed"])],
    })).verdict
    assert v.cause == "host_oom"
    assert "shm_exhausted" in causes_of(v.symptoms)


def test_an_oom_kill_of_a_process_the_job_never_names_is_not_the_root(tmp_path):
    # The kernel log names the job's pid 7001 (a hung-task report), so kernel and job share
    # a pid namespace; the OOM killer's victim 7815 is nowhere in the job's logs.
    v = analyze(bundle(tmp_path, {
        "dmesg.txt": [("", "[Sun Jun  9 11:49:30 2024] INFO: task python3:7001 blocked for more than 120 seconds."),
                      ("", SAMPLE["oom_killer"])],
        "train.log": [("", "node1:7001:7050 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"),
                      ("2024-06-09 11:49:40", SAMPLE["torch_shm_write_failed"])],
    })).verdict
    assert v.cause == "shm_exhausted"
    assert any("appear nowhere in the job's own logs" in c for c in v.trace)
    assert "host_oom" in causes_of(v.alternatives)


def test_p2p_disabled_in_the_environment_speaks_against_a_p2p_hang(tmp_path):
    # The real corpus hang (NVIDIA/nccl IOMMU report) reads as nccl_p2p; the same logs next to an
    # env.txt with NCCL_P2P_DISABLE=1 (written here) cannot be a P2P fault: the transport was off.
    import shutil
    src = Path(__file__).resolve().parents[2] / "fixtures/corpus/nccl-p2p-iommu-01/bundle"
    # (a lean since audit 5 M3: nccl-tests falling silent and NCCL stopping at Init START are one
    # observation of the same stopped run)
    before = analyze(src).verdict
    assert before.cause == "unknown" and "leaning nccl_p2p" in before.summary
    b = tmp_path / "b"
    shutil.copytree(src, b)
    (b / "env.txt").write_text("NCCL_P2P_DISABLE=1\n", encoding="utf-8")
    v = analyze(b).verdict
    import re
    lean = lambda verdict: float(re.search(r"leaning nccl_p2p \((\d\.\d+)\)", verdict.summary).group(1))  # noqa: E731
    assert v.cause != "nccl_p2p" and lean(v) < lean(before) / 2, (before.summary, v.summary)
    assert any("NCCL_P2P_DISABLE=1 was set" in t for t in v.trace)


def test_host_memory_rising_to_a_kill_is_two_signs_of_host_oom(tmp_path):
    # DeepSpeed's see_memory_usage sample line with its figure varied here (synthetic trend),
    # then DeepSpeed's real "exits with return code = -9" line.
    report = SAMPLE["host_memory_report"]
    lines = [("", report.replace("percent = 84.6%", f"percent = {pct}%")) for pct in ("61.0", "74.2", "88.9")]
    v = analyze(bundle(tmp_path, {"train.log": lines + [("", SAMPLE["deepspeed_return_code"])]})).verdict
    assert v.cause == "host_oom" and "rose over 3 readings" in v.root.summary
    assert not any(t.startswith("resolve: tentative") for t in v.trace)


def test_one_high_memory_figure_is_not_a_trend(tmp_path):
    v = analyze(bundle(tmp_path, {"train.log": [("", SAMPLE["host_memory_report"]),
                                                ("", SAMPLE["deepspeed_return_code"])]})).verdict
    assert v.cause == "host_oom" and "rose over" not in v.root.summary


# Traceback lines of a LLaMA-Factory rank waiting in transformers' main_process_first (public
# report, quoted in a public repository), followed here by the watchdog's real timeout line: a
# synthetic arrangement of real lines.
_MAIN_FIRST_TRACEBACK = [
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "/root/LLaMA-Factory-main/src/llamafactory/data/loader.py", line 303, in get_dataset',
    '[rank1]:     with training_args.main_process_first(desc="load dataset", local=(not data_args.data_shared_file_system)):',
    '[rank1]:   File "/root/miniconda3/envs/llama_factory/lib/python3.10/contextlib.py", line 135, in __enter__',
    "[rank1]:     return next(self.gen)",
    '[rank1]:   File "/root/miniconda3/envs/llama_factory/lib/python3.10/site-packages/transformers/training_args.py", line 2451, in main_process_first',
    "[rank1]:     dist.barrier()",
    '[rank1]:   File "/root/miniconda3/envs/llama_factory/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 4635, in barrier',
    "[rank1]:     work = group.barrier(opts=opts)",
]


def test_a_timeout_inside_main_process_first_is_the_main_process_being_late(tmp_path):
    lines = [("", l) for l in _MAIN_FIRST_TRACEBACK] + [("", SAMPLE["watchdog_timeout"])]
    v = analyze(bundle(tmp_path, {"train.log": lines})).verdict
    assert v.cause == "straggler_timeout" and "main_process_first()" in v.root.summary
    assert not any(t.startswith("resolve: tentative") for t in v.trace)


def test_the_same_timeout_without_the_barrier_frames_is_not_a_straggler_by_frames(tmp_path):
    v = analyze(bundle(tmp_path, {"train.log": [("", SAMPLE["watchdog_timeout"])]})).verdict
    assert v.cause != "straggler_timeout" or "main_process_first" not in v.root.summary


# A real PyTorch host-allocation failure (a public report, quoted in a public repository).
_CPU_ALLOC_FAILED = ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate "
                     "memory: you tried to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)")


def test_a_failed_host_allocation_under_ulimit_v_is_two_signs_of_host_oom(tmp_path):
    # ulimit.txt in bash's `ulimit -a` layout, written here: a 4 GB address-space limit.
    lines = [("", "Traceback (most recent call last):"), ("", '  File "/w/train.py", line 9, in <module>'),
             ("", "    model = build()"), ("", _CPU_ALLOC_FAILED)]
    v = analyze(bundle(tmp_path, {"train.log": lines,
                                  "ulimit.txt": [("", "virtual memory          (kbytes, -v) 4000000")]})).verdict
    assert v.cause == "host_oom" and any("ulimit -v" in f.summary for f in [v.root, *v.symptoms, *v.alternatives])
    assert not any(t.startswith("resolve: tentative") for t in v.trace)


def test_the_same_failure_without_a_limit_is_host_memory_without_naming_a_limit(tmp_path):
    # ENOMEM from the allocator is one clear reading (the process could not get host memory);
    # which limit, if any, is what the ulimit/cgroup files add.
    lines = [("", "Traceback (most recent call last):"), ("", '  File "/w/train.py", line 9, in <module>'),
             ("", "    model = build()"), ("", _CPU_ALLOC_FAILED)]
    v = analyze(bundle(tmp_path, {"train.log": lines})).verdict
    assert v.cause == "host_oom" and v.root.rule == "catalog"


def test_a_claimed_world_size_is_a_count_never_materialized():
    """Found by the fuzz campaign (seed 42 was OOM-killed at 24 GB): an NCCL init line may claim
    nranks 4000000000; the silent ranks are walked lazily and cut, never a set of the world."""
    from postmortem.classify.rules.config import NAMED_SILENT_RANKS, silent_ranks
    named = silent_ranks(4_000_000_000, {0, 1, 2}, {7})
    assert len(named) == NAMED_SILENT_RANKS and named[:3] == [3, 4, 5] and 7 in named
    assert silent_ranks(4, {0, 1}, set()) == [2, 3]
