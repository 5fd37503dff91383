"""Each rule: no match, match, and what its findings claim — on real inputs."""
import re
from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.classify import classify, rules
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
K = knowledge.load()


def case_of(path: Path):
    return analyze(path).case


def run(rule, path: Path):
    trace: list[str] = []
    return rule.findings(case_of(path), K, trace), trace


def test_known_messages_groups_repeats_and_cites_lines():
    fs, trace = run(rules.KnownMessages(), CORPUS / "shm-dataloader-megatron-05/bundle")
    shm = [f for f in fs if f.cause == "shm_exhausted"]
    assert shm and all(r.path == "train.log" and r.line for f in shm for r in f.evidence)
    bus = next(f for f in shm if f.discriminator == "dataloader_bus_error")
    assert bus.confidence > 0.8  # several identical lines raise support a little
    assert any("dataloader_bus_error" in t for t in trace)


def test_known_messages_no_match_on_unrelated_log():
    fs, _ = run(rules.KnownMessages(), CORPUS / "nccl-p2p-iommu-01/bundle")
    assert not [f for f in fs if f.role == "root"]


def test_xid_catalog_reads_code_and_gpu():
    fs, trace = run(rules.XidCatalog(), CORPUS / "xid79-fell-off-bus-01/bundle")
    assert [f.cause for f in fs] == ["gpu_fell_off_bus"]
    assert fs[0].discriminator == "xid79" and "0000:09:00" in fs[0].summary
    fs, _ = run(rules.XidCatalog(), CORPUS / "pcie-aer-fatal-01/bundle")
    assert fs == []


def test_sigbus_with_nccl_frames_is_shm():
    fs, trace = run(rules.SigbusContext(), CORPUS / "shm-nccl-sigbus-ucx-06/bundle")
    # A lean, not a claim: NCCL also faults on GPU memory mapped through the BAR (GDRCopy).
    assert fs and fs[0].cause == "shm_exhausted" and fs[0].strength == "weak" and fs[0].confidence < 0.35
    assert any("inside NCCL code" in t for t in trace)


def test_sigbus_in_core_inside_dev_shm_is_proven():
    fs, _ = run(rules.SigbusContext(), ROOT / "fixtures/cores/shm-sigbus.core.gz")
    assert fs and fs[0].cause == "shm_exhausted" and fs[0].confidence >= 0.9
    assert "/dev/shm/torch_" in fs[0].summary


def test_sigbus_rule_silent_without_sigbus():
    fs, _ = run(rules.SigbusContext(), CORPUS / "oom-host-oomkiller-fsdp-01/bundle")
    assert fs == []


def test_version_mismatch_needs_two_versions():
    fs, trace = run(rules.NcclVersionMismatch(), CORPUS / "nccl-version-mismatch-01/bundle")
    assert fs and "2.14.3" in fs[0].summary and "2.19.3" in fs[0].summary
    fs, _ = run(rules.NcclVersionMismatch(), CORPUS / "multi-roce-hca-enodev-08/bundle")
    assert fs == []


def test_timeout_with_silent_rank_is_a_straggler():
    fs, trace = run(rules.CollectiveTimeout(), CORPUS / "multi-tokenize-timeout-04/bundle")
    assert fs[0].cause == "straggler_timeout" and "[0]" in fs[0].summary
    assert "tokenizer" in fs[0].summary


def test_silent_hang_of_nccl_tests_is_p2p():
    fs, trace = run(rules.SilentCollectiveHang(), CORPUS / "nccl-p2p-iommu-01/bundle")
    assert fs and fs[0].cause == "nccl_p2p"
    assert "root complexes" not in fs[0].summary  # no topology measured: bus numbers are no proof
    fs, _ = run(rules.SilentCollectiveHang(), CORPUS / "multi-docker-noiface-nccltests-06/bundle")
    assert fs == []  # that run failed with an error: not a silent hang


def test_a_broken_rule_becomes_a_trace_line(monkeypatch):
    class Broken(rules.Rule):
        id = "broken"

        def findings(self, case, k, trace):
            raise ValueError("boom")

    monkeypatch.setattr("postmortem.classify.RULES", rules.RULES + (Broken(),))
    case = case_of(CORPUS / "ecc-uncorrectable-01/bundle")
    v = classify(case, K)
    assert v.cause == "gpu_memory_ecc"
    assert any("broken: rule failed: ValueError: boom" in t for t in v.trace)


def test_counter_evidence_from_large_shm(tmp_path):
    """A real df of a 16G /dev/shm at 3% next to a DataLoader bus error lowers confidence and says why."""
    b = tmp_path / "b"
    b.mkdir()
    (b / "train.log").write_bytes((CORPUS / "shm-dataloader-megatron-05/bundle/train.log").read_bytes())
    df = sorted((ROOT / "fixtures/system").glob("df*shm*"))
    if not df:
        pytest.skip("no real df fixture yet")
    base = analyze(CORPUS / "shm-dataloader-megatron-05/bundle").verdict
    (b / "df.txt").write_bytes(df[0].read_bytes())
    v = analyze(b).verdict
    facts = {f.name: f.value for f in analyze(b).case.facts}
    if facts.get("shm.size_bytes", 0) >= 1 << 30:
        assert v.confidence < base.confidence and v.counter_evidence


def test_sigbus_with_a_64m_dev_shm_is_shm():
    """Lab: a main-process SIGBUS (faulthandler) while /dev/shm was a 64 MiB tmpfs."""
    fs, trace = run(rules.SigbusContext(), ROOT / "fixtures/bundles/lab-shm-main-sigbus-core/bundle")
    # the size (a container default, weak) and the segments the dead process left (another
    # observation) are two independent weak signs (audit 6 H2)
    assert fs[0].cause == "shm_exhausted" and set(fs[0].signs) == {"sigbus.small_shm", "sigbus.shm_segments_left"}
    assert "64 MiB" in fs[0].summary


def test_gloo_timeout_with_a_busy_rank_is_a_straggler():
    """Lab: rank 1 times out in a gloo barrier while rank 0's dump shows it in preprocess()."""
    fs, trace = run(rules.CollectiveTimeout(), ROOT / "fixtures/bundles/lab-torchrun-straggler-timeout/bundle")
    assert fs[0].cause == "straggler_timeout" and "[0]" in fs[0].summary and "preprocess" in fs[0].summary


def test_single_rank_timeout_without_world_is_no_claim(tmp_path):
    """Only one rank's line, no way to know the others: neither a stuck collective nor a
    straggler is claimed; with no transport error it only leans straggler (one weak sign)."""
    b = tmp_path / "b"
    b.mkdir()
    line = (CORPUS / "multi-tokenize-timeout-04/bundle/train.log").read_text().splitlines()[1]
    (b / "rank1.log").write_text(line + "\n")
    fs, _ = run(rules.CollectiveTimeout(), b)
    assert [f.cause for f in fs] == ["straggler_timeout"]
    assert fs[0].strength == "weak" and fs[0].confidence < 0.35
    assert analyze(b).verdict.cause == "unknown"


def test_oom_kill_of_another_process_does_not_explain_a_sigbus():
    """Lab bundles keep the whole boot's dmesg, with OOM kills of earlier experiments."""
    v = analyze(ROOT / "fixtures/bundles/lab-shm-main-sigbus-core/bundle").verdict
    assert v.cause == "shm_exhausted"
    assert any("host_oom" in t and "counter" in t for t in v.trace) or any("OOM" in c for a in v.alternatives for c in ())
    oom = [f for f in v.alternatives if f.cause == "host_oom"]
    assert oom, "the OOM kill stays visible as an alternative"


def test_oom_kill_in_another_pid_namespace_still_explains_a_sigkill(tmp_path):
    """A container's launcher sees its own pids, the host kernel others: a victim pid the
    job never names proves nothing then, and the job's SIGKILL matches the OOM killer."""
    b = tmp_path / "b"
    b.mkdir()
    # The two logs come from different years: the kernel line goes in without its time
    # prefix (a bare kernel message), or it would be history from before the job.
    dmesg = (CORPUS / "oom-host-oomkiller-fsdp-01/bundle/dmesg.txt").read_text()
    (b / "dmesg.txt").write_text(re.sub(r"(?m)^\[[^\]]*\] ", "", dmesg))
    (b / "train.log").write_bytes((ROOT / "fixtures/launcher/torchrun_sigkill.log").read_bytes())
    v = analyze(b).verdict
    assert v.cause == "host_oom" and v.confidence >= 0.8
    assert not any("another process" in c for c in v.counter_evidence)


def test_quiet_pcie_topology_suggests_a_p2p_hang():
    """fixtures/validation2: a silent hang whose only output is `nvidia-smi topo -m` (NODE links)."""
    fs, trace = run(rules.QuietPcieTopology(), ROOT / "fixtures/validation2/p2p-acs-amd-hang-05/bundle")
    assert fs and fs[0].cause == "nccl_p2p" and fs[0].confidence < 0.5 and "NODE" in fs[0].summary


def test_quiet_pcie_topology_stays_silent_when_errors_exist(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    topo = ROOT / "fixtures/validation2/p2p-acs-amd-hang-05/bundle/nvidia_smi_topo.txt"
    (b / "topo.txt").write_bytes(topo.read_bytes())
    (b / "stderr.log").write_bytes((CORPUS / "ecc-uncorrectable-01/bundle/stderr.log").read_bytes())
    fs, _ = run(rules.QuietPcieTopology(), b)
    assert fs == []


def test_gpu_health_reads_nvidia_smi_ecc(tmp_path):
    """A real nvidia-smi table with 0 uncorrected ECC errors says nothing; the same table with
    the counter at 2 (the one field changed, in the test) points at GPU memory."""
    table = (ROOT / "fixtures/system/public/smi_table_580_a100.txt").read_text()
    b = tmp_path / "b"
    b.mkdir()
    (b / "smi.txt").write_text(table)
    fs, _ = run(rules.GpuHealth(), b)
    assert fs == []
    import re
    rows = table.splitlines()
    i = next(n for n, l in enumerate(rows) if re.search(r"\|\s+0\s+\|\s*$", l))
    rows[i] = re.sub(r"\|(\s+)0(\s+\|\s*)$", r"|\g<1>2\g<2>", rows[i])
    (b / "smi.txt").write_text("\n".join(rows) + "\n")
    fs, _ = run(rules.GpuHealth(), b)
    assert fs and fs[0].cause == "gpu_memory_ecc" and "ecc_uncorrected=2" in fs[0].summary


def test_fallout_of_a_present_cause_is_not_its_rival():
    """AER on the upstream port, then Xid 79 on the GPU behind it (fixtures/validation3):
    the AER is how the GPU fell off the bus (causes.toml `explains`), not a second verdict."""
    v = analyze(ROOT / "fixtures/validation3/aer-surprise-down-xid79-gpuburn-05/bundle").verdict
    assert v.cause == "gpu_fell_off_bus"
    assert any("pcie_error" in t and "explained by gpu_fell_off_bus" in t for t in v.trace)


def test_advice_tied_to_the_deciding_message_comes_first():
    """RoCE completion error 12 (fixtures/validation3): the GID-index advice leads the fixes."""
    v = analyze(ROOT / "fixtures/validation3/roce-error12-gid-index-02/bundle").verdict
    assert v.cause == "nccl_network" and "NCCL_IB_GID_INDEX" in v.remediation[0]


def test_connection_errors_alone_are_the_network():
    """fixtures/validation6: ncclRemoteError / connection reset and nothing else."""
    v = analyze(ROOT / "fixtures/validation6/remote-error-ib-nodes-nccl2076-02/bundle").verdict
    # a closed connection is also what a crashed peer leaves: one weak sign, a lean, not a claim
    assert v.cause == "unknown" and "leaning nccl_network" in v.summary


def test_connection_errors_after_a_peer_crashed_are_fallout():
    """fixtures/timeline/two-host: rank 1 died of SIGSEGV, rank 0's gloo saw the connection
    close — the network is the messenger, not the cause."""
    v = analyze(ROOT / "fixtures/timeline/two-host").verdict
    assert v.cause != "nccl_network"
    assert any("died of SIGSEGV" in t for t in v.trace)


def test_high_host_memory_then_a_kill_is_host_oom():
    """fixtures/validation10: DeepSpeed reports 84.6% host memory, then kills a subprocess."""
    fs, trace = run(rules.HighHostMemoryThenDeath(), ROOT / "fixtures/validation10/deepspeed-offload-host-oom-06/bundle")
    assert fs and fs[0].cause == "host_oom" and "85%" in fs[0].summary


def test_high_host_memory_alone_says_nothing(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    lines = (ROOT / "fixtures/validation10/deepspeed-offload-host-oom-06/bundle").glob("*")
    text = next(lines).read_text().splitlines()
    (b / "train.log").write_text("\n".join(l for l in text if "Killing subprocess" not in l) + "\n")
    fs, _ = run(rules.HighHostMemoryThenDeath(), b)
    assert fs == []


def test_cuda_build_newer_than_driver_needs_a_newer_major():
    """corpus nccl-version-mismatch-01 prints `NCCL version 2.19.3+cuda12.3` beside
    `cudaDriverVersion 12000`: same major version, minor-version compatibility, no finding."""
    fs, _ = run(rules.CudaBuildNewerThanDriver(), CORPUS / "nccl-version-mismatch-01/bundle")
    assert fs == []


def test_cuda_build_newer_major_than_driver(tmp_path):
    """The same real lines with the build's CUDA major raised past the driver's (changed in the test)."""
    b = tmp_path / "b"
    b.mkdir()
    text = (CORPUS / "nccl-version-mismatch-01/bundle/nccl_instance-8g-96c-2.log").read_text()
    (b / "nccl.log").write_text(text.replace("+cuda12.3", "+cuda13.0"))
    fs, _ = run(rules.CudaBuildNewerThanDriver(), b)
    assert fs and fs[0].cause == "cuda_driver_mismatch" and "13.0" in fs[0].summary


def test_unknown_verdict_asks_first_for_the_error_file_the_launcher_names():
    """fixtures/validation14: a Ray Tune failure table whose NCCL error sits in a file the thread never quoted."""
    v = analyze(ROOT / "fixtures/validation14/ray-train-tune-summary-nccl-ifname-wl-03/bundle").verdict
    assert v.cause == "unknown" and v.collect[0].startswith("the error file the job's launcher names: /home/ray/")


def test_nccl_that_stops_during_init_on_one_host_is_a_p2p_suspect():
    """fixtures/validation15: two GPU processes bootstrap, then nothing — fixed by disabling the IOMMU."""
    fs, _ = run(rules.NcclStoppedDuringInit(), ROOT / "fixtures/validation15/iommu-p2p-hang-a6000-docker-03/bundle")
    assert fs and fs[0].cause == "nccl_p2p" and fs[0].confidence < 0.4


def test_nccl_stopped_during_init_stays_silent_with_errors_or_several_hosts():
    for case in ("multi-roce-hca-enodev-08", "nccl-version-mismatch-01"):
        fs, _ = run(rules.NcclStoppedDuringInit(), CORPUS / case / "bundle")
        assert fs == [], case


def test_progress_stalled_at_zero_after_nccl_init_is_a_p2p_suspect():
    """fixtures/validation16: vLLM on two workstation GPUs, NCCL init completes, the prompt
    progress bar never leaves 0% — fixed by disabling ACS and the IOMMU."""
    fs, _ = run(rules.NcclStoppedDuringInit(), ROOT / "fixtures/validation16/iommu-acs-hang-a6000-tp2-vllm-01/bundle")
    assert fs and fs[0].cause == "nccl_p2p" and "0%" in fs[0].summary


def test_unknown_verdict_asks_for_the_traceback_of_a_rank_that_exited_with_an_error_code():
    """fixtures/validation18: DeepSpeed says a rank exited with code 1, and no traceback is in the bundle."""
    v = analyze(ROOT / "fixtures/validation18/deepspeed-rc1-oom-dschat-step2-02/bundle").verdict
    assert v.cause == "unknown" and any("exited with code 1" in c for c in v.collect[:2])


# ---- the memory cgroup and the process's limits (collect's cgroup_memory.txt, proc_limits.txt)

LIMITS = ROOT / "fixtures/system/limits"


def test_cgroup_oom_kill_count_is_the_second_sign_of_a_sigkill_without_kernel_log():
    """lab-torchrun-oom-cgroup-no-kmsg: collect could not read dmesg (no CAP_SYSLOG); torchrun
    says rank 1 died of SIGKILL and the job's cgroup counts 1 OOM kill: two independent signs."""
    v = analyze(ROOT / "fixtures/bundles/lab-torchrun-oom-cgroup-no-kmsg/bundle").verdict
    assert v.cause == "host_oom"
    assert any("cgroup_memory.txt" in t and "cgroup-oom-kills" in t for t in v.trace)
    assert any("independent weak signs" in t and "cgroup.oom_kills" in t for t in v.trace)


def test_cgroup_oom_kill_count_alone_is_no_sign(tmp_path):
    """A count without a death of the job in the bundle may be an earlier job's."""
    (tmp_path / "cgroup_memory.txt").write_bytes((LIMITS / "cgroup_memory_v1_pid_oom.txt").read_bytes())
    findings, trace = run(rules.CgroupOomKills(), tmp_path)
    assert findings == [] and any("no death of the job" in t for t in trace)


def test_cgroup_of_the_jobs_pid_without_oom_kill_speaks_against_host_oom(tmp_path):
    (tmp_path / "train.log").write_bytes((ROOT / "fixtures/launcher/torchrun_sigkill.log").read_bytes())
    base = analyze(tmp_path).verdict
    (tmp_path / "cgroup_memory.txt").write_bytes((LIMITS / "cgroup_memory_v1_pid_clean.txt").read_bytes())
    v = analyze(tmp_path).verdict
    assert any("counts no OOM kill" in t for t in v.trace)
    assert v.cause != "host_oom"
    before = [t for t in base.trace if "host_oom" in t]
    assert before, "without the cgroup the SIGKILL leans to host_oom"


def test_cgroup_read_as_self_is_not_counter_evidence(tmp_path):
    (tmp_path / "train.log").write_bytes((ROOT / "fixtures/launcher/torchrun_sigkill.log").read_bytes())
    (tmp_path / "cgroup_memory.txt").write_bytes(
        (ROOT / "fixtures/bundles/lab-fd-limit-dataloader/bundle/cgroup_memory.txt").read_bytes())
    v = analyze(tmp_path).verdict
    assert not any("counts no OOM kill" in t for t in v.trace)


def test_measured_low_limit_backs_the_message_of_its_resource():
    findings, trace = run(rules.MeasuredLimit(), ROOT / "fixtures/bundles/lab-fd-limit-dataloader/bundle")
    assert [f.cause for f in findings] == ["fd_limit"]
    assert any(r.path == "proc_limits.txt" for r in findings[0].evidence)
    assert any("Too many open files" in r.text for r in findings[0].evidence)


def test_measured_limit_is_silent_without_a_message_of_its_resource():
    findings, _ = run(rules.MeasuredLimit(), ROOT / "fixtures/bundles/lab-torchrun-oom-cgroup/bundle")
    assert findings == []


def test_a_measured_memlock_limit_backs_ucx_enomem():
    """ulimit -l 64 (KiB) beside UCX's ibv_create_cq 'Cannot allocate memory' (validation17)."""
    findings, trace = run(rules.MeasuredLimit(), ROOT / "fixtures/validation17/ucx-ibv-create-cq-memlock-64k-02/bundle")
    assert [f.cause for f in findings] == ["memlock_limit"]
    assert any(r.path == "ulimit.txt" for r in findings[0].evidence)


def test_silent_hang_across_host_bridges_is_read_from_the_topology_matrix(tmp_path):
    """`nvidia-smi topo -m` (layout of the NVIDIA tool, values written here) with SYS between
    the GPUs: the hang's P2P traffic crossed the root complexes."""
    import shutil
    b = tmp_path / "b"
    shutil.copytree(CORPUS / "nccl-p2p-iommu-01/bundle", b)
    (b / "nvidia-smi-topo.txt").write_text(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tSYS\t0-15\t0\n"
        "GPU1\tSYS\t X \t16-31\t1\n\n"
        "Legend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n")
    fs, _ = run(rules.SilentCollectiveHang(), b)
    assert fs and fs[0].cause == "nccl_p2p" and "root complexes" in fs[0].summary
