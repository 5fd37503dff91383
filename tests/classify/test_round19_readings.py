"""Round 19's readings, each from the program that prints the line:

- CPython asyncio's bind failure ("error while attempting to bind on address ...: address already
  in use", Lib/asyncio/base_events.py) is EADDRINUSE: port_in_use, as the bare strerror is.
- An NVIDIA device node refused with EPERM (strace) is the device cgroup refusing it
  (security/device_cgroup.c): the container is not granted the GPU, device_mapping.  NVML's
  "Failed to initialize NVML: Unknown Error" alone only leans there (NVIDIA's container-toolkit
  troubleshooting guide; NVML_ERROR_UNKNOWN is also a driver in a bad state).
- ROCm's GPU memory faults (ROCR-Runtime's HSA_STATUS_ERROR_EXCEPTION and VM fault handler) read as
  CUDA's illegal address does: the job's kernel, weak alone.
- OpenSSH's "Could not resolve hostname" (the launcher's ssh to a worker) leans to the network's
  set-up, as c10d's unresolved store address does.
- CPython's CalledProcessError "died with <Signals.SIGKILL: 9>" is a death by SIGKILL (launcher.py).

Cases: the nineteenth sweep's development half (fixtures/validation34, public threads scored
before these readings: all unknown) and real output made here (fixtures/launcher)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]


def _case(folder: str, name: str) -> Path:
    return next((ROOT / "fixtures").glob(f"{folder}/*/{name}/bundle"))


@pytest.mark.parametrize("case, category, cause", [
    ("aphrodite-621-kaggle-tp2-api-port-already-in-use-07", "config", "port_in_use"),
    ("k8s-cpumanager-static-nvml-unknown-error-eperm-01", "config", "device_mapping"),
])
def test_public_case_reads_the_programs_own_words(case, category, cause):
    v = analyze(_case("validation34", case)).verdict
    assert (v.category.value, v.cause) == (category, cause), (v.cause, v.confidence, v.trace[-3:])
    assert v.root is not None and v.root.evidence, v.trace


def test_real_asyncio_bind_failure_is_port_in_use(tmp_path):
    log = (ROOT / "fixtures" / "launcher" / "asyncio_bind_in_use.log").read_text()
    (tmp_path / "server.log").write_text(log)
    v = analyze(tmp_path).verdict
    assert v.cause == "port_in_use", (v.cause, v.trace[-3:])
    assert any("error while attempting to bind" in r.text for r in v.root.evidence)


def test_asyncio_bind_failure_of_another_errno_is_not_port_in_use(tmp_path):
    # EADDRNOTAVAIL: the address is not this host's (asyncio appends no port-in-use text)
    (tmp_path / "server.log").write_text(
        "OSError: [Errno 99] error while attempting to bind on address ('10.0.0.9', 8000): "
        "cannot assign requested address\n")
    v = analyze(tmp_path).verdict
    assert v.cause != "port_in_use", v.trace[-3:]


@pytest.mark.parametrize("case, leaning", [
    ("container-lost-gpu-systemd-daemon-reload-nvml-unknown-02", "device_mapping"),
    ("rocm-6023-mi325x-tp8-hsa-exception-aiter-custom-allreduce-04", "app_error"),
    ("aws-do-eks-33-mpijob-nccl-allreduce-launcher-cannot-resolve-worker-fqdn-dnspolicy-07", "nccl_network"),
])
def test_one_weak_sign_only_leans(case, leaning):
    v = analyze(_case("validation34", case)).verdict
    assert v.cause == "unknown"
    assert f"leaning {leaning}" in v.summary, (v.summary, v.trace[-3:])


def test_device_node_refused_by_mode_is_not_the_device_cgroup(tmp_path):
    # EACCES is a file mode or ACL refusing the caller: no reading of the device cgroup
    (tmp_path / "strace.txt").write_text('open("/dev/nvidiactl", O_RDWR)          = -1 EACCES (Permission denied)\n')
    v = analyze(tmp_path).verdict
    assert v.cause != "device_mapping", v.trace[-3:]


def test_python_launcher_sigkill_leans_to_host_memory():
    v = analyze(_case("validation33", "autotrain-456-colab-falcon7b-load-shards-host-ram-sigkill-05")).verdict
    assert v.cause == "unknown" and "leaning host_oom" in v.summary, (v.summary, v.trace[-3:])


def test_elastic_error_record_traceback_is_read_as_its_lines():
    """torch elastic's error.json (error_handler.record_exception) holds the worker's traceback as
    one escaped JSON string: its lines are read, each cited at the record's physical line
    (real error files written by torchrun's agent in fixtures/validation30 and validation27)."""
    from postmortem.parsers import parse_text
    path = next((ROOT / "fixtures" / "validation30").glob(
        "lab-d/lab12-torchrun-rank0-per-tensor-ckpt-keeps-files-open-nofile-1024-errorfile/bundle/log-dir/*/attempt_0/1/error.json"))
    result = parse_text("error.json", path.read_text().splitlines())
    stacks = result.sink.stacks
    assert stacks, result.sink.problems
    assert any(f.function == "wrapper" for s in stacks for f in s.frames)
    assert {e.ref.line for e in result.sink.events} <= {1}
    assert any("Connection closed by peer" in (e.text or "") for e in result.sink.events)


def test_elastic_error_record_cut_inside_its_string_still_yields_its_lines():
    from postmortem.parsers.wrappers import unwrap_callstack
    cut = '      "py_callstack": "Traceback (most recent call last):\\n  File \\"x.py\\", line 3, in f\\nRuntimeError: connect() timed out.\\'
    assert unwrap_callstack(cut) == ["Traceback (most recent call last):", '  File "x.py", line 3, in f',
                                     "RuntimeError: connect() timed out."]
    assert unwrap_callstack('"message": "RuntimeError: boom"') is None
