"""Round 20's readings, each from the program that prints the line:

- PyTorch c10d before the socket rewrite (torch/lib/c10d/Utils.cpp tcputil::connect, torch <= 1.9)
  throws std::invalid_argument("host not found: " + gai_strerror(err)), a ValueError in Python: the
  store's host name does not resolve -- the network's set-up, weak as today's "cannot be retrieved
  (gai error: ...)", and never the job's own argument error.
- The NVIDIA driver's "Cannot map memory with base addr ... and size of ... pages"
  (kernel-open/nvidia/os-mlock.c os_lookup_user_io_memory, reached when get_user_pages could not
  pin a host range) leans to pinned memory.
- accelerate's own refusals: "Tried to launch distributed communication on port `N`, but another
  process is utilizing it" (utils/launch.py, after is_port_in_use) is port_in_use; "Using RTX 4000
  series doesn't support faster communication broadband via P2P or IB" (state.py, several RTX 40 GPUs
  under a driver below 550.40.07) is NCCL's P2P transport unusable there: nccl_p2p.
- c10d's "Ping failed, invalid value returned from server" (TCPStore.cpp, the client's check of the
  server it reached): something that is not a store holds the store's port, port_in_use.
- torchrun's "ValueError: Cuda is not available." (run.py, --nproc-per-node=gpu with no GPU
  visible) is the node's device visibility, as c10d's "No CUDA GPUs are available" is.
- Ray's raylet summary "N Workers (tasks / actors) killed due to memory pressure (OOM)" is the
  memory monitor's kill (node_manager.cc), as "Task was killed due to the node running low on
  memory" is: host_oom.

Cases: the twentieth sweep's development half (fixtures/validation35: public threads and lab runs,
scored at ce7b99f5 before these readings)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]


def _case(folder: str, name: str) -> Path:
    return next((ROOT / "fixtures").glob(f"{folder}/*/{name}/bundle"))


def test_old_c10d_host_not_found_is_the_network_not_the_jobs_argument():
    # first seen: config/app_error 0.70 (a ValueError raised under the job's frame)
    v = analyze(_case("validation35", "pytorch-64990-c10d-rdzv-master-hostname-unresolvable-aws-host-not-found-03")).verdict
    assert v.category.value != "config", (v.cause, v.trace[-4:])
    assert v.leaning == "nccl_network", (v.summary, v.trace[-4:])
    assert v.leaning_support == 0.25   # not halved: the ValueError is the unresolved name itself


@pytest.mark.parametrize("case, leaning", [
    ("elastic-31-tcpstore-pod-hostname-unresolvable-host-not-found-02", "nccl_network"),
    ("sglang-pr26301-hicache-cudahostregister-low-host-memory-dmesg-cannot-map-07", "pinned_memory"),
])
def test_one_weak_reading_leans_without_claiming(case, leaning):
    v = analyze(_case("validation35", case)).verdict
    assert v.cause == "unknown" and v.leaning == leaning, (v.summary, v.trace[-4:])


def test_host_not_found_needs_a_resolver_error(tmp_path):
    # the same words from another program, with no gai_strerror text after them, read nothing
    (tmp_path / "app.log").write_text("ERROR lookup failed: host not found: web-7\n")
    v = analyze(tmp_path).verdict
    assert v.leaning != "nccl_network" and v.cause != "nccl_network", v.trace[-3:]


def test_rays_kill_summary_wrapped_in_a_paste_is_host_oom():
    v = analyze(_case("validation35", "vllm-1160-tp4-ray-raylet-oom-kills-workers-exporting-all-logits-08")).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom"), (v.cause, v.trace[-3:])
    assert any("killed due to memory pressure (OOM)" in r.text for r in v.root.evidence)


def test_rays_kill_summary_as_ray_documents_it(tmp_path):
    # doc/source/ray-core/scheduling/ray-oom-prevention.rst (ray-project/ray), verbatim
    (tmp_path / "driver.log").write_text(
        "(raylet) node_manager.cc:3040: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
        "crashed due to other reasons at node (ID: 2c82620270df6b9dd7ae2791ef51ee4b5a9d5df9f795986c10dd219c, IP: "
        "172.31.183.172) over the last time period. To see more information about the Workers killed on this node, "
        "use `ray logs raylet.out -ip 172.31.183.172`\n")
    v = analyze(tmp_path).verdict
    assert v.cause == "host_oom", v.trace[-3:]


@pytest.mark.parametrize("case, category, cause", [
    ("rag-retrieval-50-accelerate-launch-port-29500-occupied-connectionerror-07", "config", "port_in_use"),
    ("peft-1927-two-consumer-gpus-accelerate-p2p-ib-guard-notimplemented-04", "comms", "nccl_p2p"),
])
def test_accelerates_own_refusals(case, category, cause):
    v = analyze(_case("validation35", case)).verdict
    assert (v.category.value, v.cause) == (category, cause), (v.cause, v.trace[-3:])
    # the exception line is the evidence, not the raise's source line an IPython traceback echoes
    assert all(not r.text.lstrip()[:1].isdigit() for r in v.root.evidence), v.root.evidence


def test_accelerate_launch_disabling_p2p_itself_is_no_failure(tmp_path):
    # accelerate/commands/launch.py's notice when it sets NCCL_P2P_DISABLE/NCCL_IB_DISABLE for the job
    (tmp_path / "launch.log").write_text("Using RTX 4000 series which doesn't support faster communication speedups. "
                                         "Ensuring P2P and IB communications are disabled.\n")
    v = analyze(tmp_path).verdict
    assert v.cause != "nccl_p2p" and v.leaning != "nccl_p2p", v.trace[-3:]


@pytest.mark.parametrize("case, category, cause", [
    ("c10d-rdzv-port-held-by-colleague-http-server-agent-falls-back-to-client-01", "config", "port_in_use"),
    ("gpu-partition-job-script-nproc-per-node-gpu-submitted-to-cpu-nodes-cuda-not-available-04", "config",
     "device_mapping"),
])
def test_lab_runs_read_from_torchs_own_words(case, category, cause):
    v = analyze(_case("validation35", case)).verdict
    assert (v.category.value, v.cause) == (category, cause), (v.cause, v.trace[-3:])


def test_a_store_that_answered_its_ping_right_is_no_foreign_program(tmp_path):
    # the same retry line with a connect error instead of a wrong ping reply reads no taken port
    (tmp_path / "agent.log").write_text(
        "[W1204 10:01:35.812821540 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
        "node0:43150 - retrying (try=0, timeout=60000ms, delay=421ms): Connection refused\n")
    v = analyze(tmp_path).verdict
    assert v.cause != "port_in_use" and v.leaning != "port_in_use", v.trace[-3:]
