"""Audit 6 H5 and H8: signs that claimed more than their mechanism shows (each on real lines)."""
import json
from pathlib import Path

from postmortem.run import Options, analyze

ROOT = Path(__file__).resolve().parents[2]


def test_cuda_unknown_error_alone_only_leans_to_the_gpu():
    # H5: BLOOM-176B's "CUDA error: unknown error" (corpus hw-gpu-died-cuda-unknown-01) is CUDA's
    # catch-all; alone it leans to the GPU and asks for the kernel log (an Xid decides), it does not claim.
    v = analyze(ROOT / "fixtures/corpus/hw-gpu-died-cuda-unknown-01/bundle", Options()).verdict
    assert v.cause == "unknown" and "leaning gpu_hardware_other" in v.summary
    assert any("dmesg" in c for c in v.collect)


def test_cuda_unknown_error_beside_an_xid_still_reads_as_the_gpu(tmp_path):
    # The same line with a real Xid 79 line of the corpus beside it: the Xid decides.
    b = tmp_path / "b"
    b.mkdir()
    (b / "train.log").write_text((ROOT / "fixtures/corpus/hw-gpu-died-cuda-unknown-01/bundle/train.log").read_text())
    kernel = [p for p in (ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle").iterdir()
              if any("Xid" in l for l in p.read_text(errors="replace").splitlines())]
    assert kernel
    (b / kernel[0].name).write_text(kernel[0].read_text())
    v = analyze(b, Options()).verdict
    assert v.category.value == "hardware"


def test_flight_recorder_names_the_dead_rank_but_not_why_it_died():
    # H8: lab-flightrec-sigkill -- rank 1 SIGKILLed (by the lab program itself); the dumps prove
    # the others waited for rank 1, not that its code failed.  The verdict stays unknown and the
    # Flight Recorder finding still names rank 1.
    a = analyze(ROOT / "fixtures/bundles/lab-flightrec-sigkill/bundle", Options())
    v = a.verdict
    assert v.cause == "unknown"
    fr = [f for f in (*v.alternatives, *v.symptoms) if f.rule == "flightrec-hang"]
    assert fr and fr[0].culprit_ranks == (1,) and "rank 1 died" in fr[0].summary
    assert fr[0].cause == "unknown"


def test_verbs_enomem_reads_the_limit_only_for_calls_that_pin_memory():
    # H4: NCCL's misc/ibvwrap.cc format "Call to %s failed with error %s" filled with the calls it
    # wraps.  Registration and CQ/QP/SRQ creation pin user memory (ib_umem_get charges
    # RLIMIT_MEMLOCK): strong.  A PD/AH allocation pins nothing: weak.
    from postmortem.knowledge import load
    k = load()
    by_id = {m.id: m for m in k.messages}
    pin = "NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory"
    reg = "NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"
    pd = "NCCL WARN Call to ibv_alloc_pd failed with error Cannot allocate memory"
    dmabuf = "NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Cannot allocate memory"
    assert by_id["ib_memlock"].regex.search(pin) and by_id["ib_memlock"].regex.search(reg)
    assert by_id["ib_memlock"].strength == "strong"
    assert not by_id["ib_memlock"].regex.search(pd) and not by_id["ib_memlock"].regex.search(dmabuf)
    assert by_id["ib_resource_enomem"].regex.search(pd) and by_id["ib_resource_enomem"].strength == "weak"
    assert not by_id["ib_resource_enomem"].regex.search(pin)
