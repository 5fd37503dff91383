"""Message families added in issue 13's third round, each line formatted here as the upstream
program prints it (format quoted beside it), alone in a bundle.  Synthetic input generated at
test time; the real lines these were found on are cited in knowledge/messages.toml."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.knowledge import catalog as C
from postmortem.knowledge.registry import KIND
from postmortem.run import analyze


def _analysis(tmp_path: Path, name: str, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / name).write_text(text + "\n", encoding="utf-8")
    return analyze(bundle)


def _msg(name: str) -> str:
    e = C.cuda_error(name)
    assert e is not None, f"CUDA catalog lost {name}"
    return e.message


# darknet src/dark_cuda.c check_error: printf("CUDA Error: %s\n", cudaGetErrorString(status))
_DARKNET = "CUDA Error: %s"
# TensorFlow stream_executor cuda_driver.cc: LOG(ERROR) << "failed call to cuInit: " << ToString(res)
#   (ToString: "<CUresult name>: <cuGetErrorString text>")
_TF_CUINIT = "2026-12-01 10:00:00.000001: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: %s: %s"

CASES = [
    ("darknet oom", lambda: _DARKNET % _msg("cudaErrorMemoryAllocation"), "config", "gpu_oom"),
    ("darknet ecc", lambda: _DARKNET % _msg("cudaErrorECCUncorrectable"), "hardware", "gpu_memory_ecc"),
    # an illegal address reads weakly, as messages.toml cuda_illegal_access (audit 6 M10): a device assert claims
    ("darknet device assert", lambda: _DARKNET % _msg("cudaErrorAssert"), "config", "app_error"),
    ("tf cuInit no device", lambda: _TF_CUINIT % ("CUDA_ERROR_NO_DEVICE", _msg("CUDA_ERROR_NO_DEVICE")), "config", "device_mapping"),
    # 803: "a mismatch between the versions of the display driver and the CUDA driver" (cuda.h) --
    # the kernel module against the libcuda loaded, not a driver older than the runtime (35)
    ("tf cuInit display/cuda driver mismatch", lambda: _TF_CUINIT % ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
                                                                    _msg("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")),
     "config", "driver_library_mismatch"),
    ("tf cuInit old driver", lambda: _TF_CUINIT % ("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
                                                   _msg("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE")),
     "config", "cuda_driver_mismatch"),
]


@pytest.mark.parametrize("name,make,category,cause", CASES, ids=[c[0] for c in CASES])
def test_a_cuda_error_line_in_any_spelling_is_read_by_the_catalog(tmp_path, name, make, category, cause):
    v = _analysis(tmp_path, "stderr.txt", make()).verdict
    assert (v.category.value, v.cause) == (category, cause), v.trace
    assert v.confidence >= 0.5


def test_an_illegal_address_in_darknet_s_spelling_leans_to_the_job_s_code(tmp_path):
    # audit 6 M10: the same text as cuda_illegal_access, the same (weak) strength, whoever printed it
    v = _analysis(tmp_path, "stderr.txt", _DARKNET % _msg("cudaErrorIllegalAddress")).verdict
    assert v.cause == "unknown" and "app_error" in v.summary, v.trace


def test_a_line_that_only_mentions_cuda_claims_nothing(tmp_path):
    v = _analysis(tmp_path, "stderr.txt", "CUDA Error: no such message in any CUDA release").verdict
    assert v.cause == "unknown"


# ATen's device check (TensorIterator / check_all_same_device):
#   "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
_MISMATCH = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!"


def test_device_mismatch_raised_in_the_jobs_own_frame_is_the_jobs_code(tmp_path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n'
          "    return forward_call(*args, **kwargs)\n"
          '  File "/home/me/proj/models/net.py", line 104, in forward\n'
          "    proposals += self.anchors\n" + _MISMATCH)
    v = _analysis(tmp_path, "stderr.txt", tb).verdict
    assert (v.category.value, v.cause) == ("config", "app_error") and v.root.rule == "app-error"


def test_device_mismatch_raised_in_library_code_is_not_claimed_as_the_jobs(tmp_path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/home/me/proj/train.py", line 40, in <module>\n'
          "    out = model(x)\n"
          '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/functional.py", line 2210, in embedding\n'
          "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n" + _MISMATCH)
    v = _analysis(tmp_path, "stderr.txt", tb).verdict
    assert v.cause != "app_error"  # the innermost frame is the library's: the mapping is as likely


# PyTorch ProcessGroupNCCL: "Watchdog caught collective operation timeout: " << work << " ran for " ...
# WorkNCCL's fields differ by version; a quote that shortens them is still the timeout.
@pytest.mark.parametrize("work", [
    "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000)",
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)",
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, ...)",
])
def test_watchdog_timeout_is_read_whatever_fields_the_work_prints(tmp_path, work):
    a = _analysis(tmp_path, "stderr.txt", f"[Rank 2] Watchdog caught collective operation timeout: {work} ran for 645901 milliseconds")
    assert any(e.kind == KIND.msg_watchdog_timeout for e in a.case.events)


# Container runtime refusals, formatted as their sources print them inside Docker's hook error:
# libnvidia-container src/cli/configure.c warnx("device error: %s") / warnx("initialization error: %s")
# (warnx prefixes "nvidia-container-cli: "), common.c select_devices "%s: %s" with "unknown device",
# error.c error_set_nvml "nvml error" + nvmlErrorString; moby daemon/errors.go
# "could not select device driver %q with capabilities: %v" and "unknown or invalid runtime name: %s".
_HOOK = ("docker: Error response from daemon: failed to create shim: OCI runtime create failed: runc create failed: "
         "unable to start container process: error during container init: error running hook #0: error running hook: "
         "exit status 1, stdout: , stderr: nvidia-container-cli: %s: unknown")
CONTAINER = [
    ("gpu the node lacks", lambda: _HOOK % ("device error: %s: unknown device" % "GPU-0f059bf0-a212-94c1-44a7-1068a6c6be66"),
     "device_mapping"),
    ("host driver not running", lambda: _HOOK % ("initialization error: nvml error: %s" % "driver not loaded"), "driver_library_mismatch"),
    ("host driver library missing", lambda: _HOOK % ("initialization error: load library failed: %s: cannot open shared object "
                                                     "file: no such file or directory" % "libnvidia-ml.so.1"),
     "driver_library_mismatch"),
    ("module and library differ", lambda: _HOOK % ("initialization error: nvml error: %s" % "driver/library version mismatch"),
     "driver_library_mismatch"),
    ("no gpu runtime", lambda: 'docker: Error response from daemon: could not select device driver %s with capabilities: %s.'
     % ('""', "[[gpu]]"), "device_mapping"),
    ("no nvidia runtime", lambda: "docker: Error response from daemon: unknown or invalid runtime name: %s." % "nvidia",
     "device_mapping"),
]


@pytest.mark.parametrize("name,make,cause", CONTAINER, ids=[c[0] for c in CONTAINER])
def test_a_container_runtime_refusal_is_the_setup(tmp_path, name, make, cause):
    v = _analysis(tmp_path, "docker.log", make()).verdict
    assert (v.category.value, v.cause) == ("config", cause), v.trace


# PyTorch c10d socket.cpp: C10D_WARNING("The client socket has failed to connect to {} {}.", addr, err)
# after glog's header; err is "(errno: N - strerror)".  c10d/logging.h puts "[c10d] " before the text.
_C10D = "[W1201 10:00:00.123456789 socket.cpp:752] [c10d] The client socket has failed to connect to %s (errno: %d - %s)."


# socket.cpp throwTimeoutError (C10D_ERROR): the connect's own final failure, after its attempts
_C10D_TIMEOUT = ("[E1201 10:00:20.123456789 socket.cpp:1028] [c10d] The client socket has timed out after 20000ms "
                 "while trying to connect to (node-0.cluster, 29500).")


@pytest.mark.parametrize("errno,text", [(110, "Connection timed out"), (113, "No route to host")])
def test_a_store_address_that_never_answers_is_the_network(tmp_path, errno, text):
    attempt = _C10D % ("[node-0.cluster]:29500", errno, text)
    v = _analysis(tmp_path, "stderr.txt", attempt + "\n" + _C10D_TIMEOUT).verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    # one attempt alone, which c10d retries, is one weak sign whatever its errno (audit 11 H1)
    (tmp_path / "alone").mkdir()
    alone = _analysis(tmp_path / "alone", "stderr.txt", attempt).verdict
    assert alone.cause == "unknown" and any("leaning nccl_network" in t for t in alone.trace)


def test_a_refused_store_connection_says_only_that_nothing_listened_yet(tmp_path):
    v = _analysis(tmp_path, "stderr.txt", _C10D % ("[node-0.cluster]:29500", 111, "Connection refused")).verdict
    assert v.cause == "unknown"


# ENOSPC from calls that write /dev/shm: CPython multiprocessing/synchronize.py SemLock (glibc
# sem_open creates /dev/shm/sem.*), PyTorch torch/multiprocessing/reductions.py reduce_storage.
_SEMLOCK_TB = ("Traceback (most recent call last):\n"
               '  File "/w/proj/writer.py", line 40, in __init__\n'
               "    self.q = mp.Queue(maxsize=8)\n"
               '  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__\n'
               "    sl = self._semlock = _multiprocessing.SemLock(\n"
               "OSError: [Errno 28] No space left on device")


def test_enospc_creating_a_semaphore_is_a_full_dev_shm(tmp_path):
    v = _analysis(tmp_path, "stderr.txt", _SEMLOCK_TB).verdict
    assert (v.category.value, v.cause) == ("config", "shm_exhausted"), v.trace


def test_enospc_writing_a_checkpoint_is_not_read_as_shared_memory(tmp_path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/w/proj/train.py", line 88, in save\n'
          "    torch.save(state, path)\n"
          "OSError: [Errno 28] No space left on device: '/data/ckpt/step1000.pt'")
    assert _analysis(tmp_path, "stderr.txt", tb).verdict.cause != "shm_exhausted"


def test_the_torch_build_without_the_gpus_architecture_is_the_setup(tmp_path):
    # torch/cuda/__init__.py: "{} with CUDA capability sm_{} is not compatible with the current PyTorch installation."
    text = ("/usr/lib/python3/site-packages/torch/cuda/__init__.py:173: UserWarning: \n"
            "NVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\n"
            "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.\n"
            "RuntimeError: CUDA error: " + _msg("cudaErrorNoKernelImageForDevice"))
    v = _analysis(tmp_path, "stderr.txt", text).verdict
    assert (v.category.value, v.cause) == ("config", "cuda_driver_mismatch"), v.trace


# aten MapAllocator: "unable to open shared memory object <{}> in read-write mode: {} ({})" with strerror/errno.
_SHM_OPEN = "RuntimeError: unable to open shared memory object <%s> in read-write mode: %s (%d)"


@pytest.mark.parametrize("err,no,cause", [("No space left on device", 28, "shm_exhausted"),
                                          ("Too many open files", 24, "fd_limit")])
def test_a_shared_tensor_that_cannot_be_opened_is_read_by_its_errno(tmp_path, err, no, cause):
    v = _analysis(tmp_path, "stderr.txt", _SHM_OPEN % ("/torch_18692_1954506624", err, no)).verdict
    assert (v.category.value, v.cause) == ("config", cause), v.trace


def test_nvidia_smi_without_a_loaded_driver_is_the_host_setup(tmp_path):
    # nvidia-smi on NVML_ERROR_DRIVER_NOT_LOADED
    v = _analysis(tmp_path, "nvidia-smi.txt", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                              "driver. Make sure that the latest NVIDIA driver is installed and running.").verdict
    assert (v.category.value, v.cause) == ("config", "driver_library_mismatch"), v.trace


# open-gpu-kernel-modules osapi.c: "NVRM: API mismatch: the client '%s' (pid %u)\nNVRM: has the version %s, but
# this kernel module has\nNVRM: the version %s. ..." (older drivers: "the client has the version %s, but").
@pytest.mark.parametrize("head", ["NVRM: API mismatch: the client 'nvidia-smi' (pid 4242)",
                                  "NVRM: API mismatch: the client has the version 570.153.02, but"])
def test_a_kernel_module_of_another_version_than_its_client_is_the_setup(tmp_path, head):
    text = (f"[   12.014918] {head}\n"
            "               NVRM: this kernel module has the version 570.144.  Please\n"
            "[   23.991672] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)")
    v = _analysis(tmp_path, "dmesg.txt", text).verdict
    assert (v.category.value, v.cause) == ("config", "driver_library_mismatch"), v.trace


# Fabric Manager's own failure lines (journal / fabricmanager.log): the NVSwitch fabric is down.
@pytest.mark.parametrize("line", [
    "Dec 01 10:00:00 node1 systemd[1]: Failed to start NVIDIA fabric manager service.",
])
def test_a_fabric_manager_failure_is_the_fabric(tmp_path, line):
    v = _analysis(tmp_path, "journal.txt", line).verdict
    assert (v.category.value, v.cause) == ("comms", "nvls_fabric"), v.trace


def test_fabric_manager_with_nothing_to_do_is_a_host_without_nvswitch(tmp_path):
    # audit 7 H3: the NVSwitch driver's NV_WARN_NOTHING_TO_DO is FM's exit on a host with no NVSwitch to manage
    # (data-infra/cube-studio#29: 2x RTX 4090; NVIDIA/gpu-operator#610: 2x A40) -- no fabric, so no fabric failure
    v = _analysis(tmp_path, "journal.txt",
                  "Dec 01 10:00:00 node1 nv-fabricmanager[2211]: request to query NVSwitch device information from "
                  "NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]").verdict
    assert v.cause != "nvls_fabric", v.trace


def test_fabric_manager_progress_lines_claim_nothing(tmp_path):
    v = _analysis(tmp_path, "journal.txt", "Dec 01 10:00:00 node1 start.sh[2211]: Polling for at least one Infiniband "
                                           "device before starting Fabric Manager...").verdict
    assert v.cause == "unknown"


# Kubernetes container status reason "OOMKilled" (kubectl describe pod / get pods), Docker State.OOMKilled.
@pytest.mark.parametrize("text", ["    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
                                  "trainer-0   0/1     OOMKilled   2 (30s ago)   5m",
                                  '            "OOMKilled": true,'])
def test_a_container_the_oom_killer_ended_is_host_memory(tmp_path, text):
    v = _analysis(tmp_path, "describe.txt", text).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom"), v.trace


def test_docker_saying_oomkilled_false_claims_nothing(tmp_path):
    assert _analysis(tmp_path, "inspect.json", '            "OOMKilled": false,').verdict.cause == "unknown"


# NCCL src/misc/socket.cc: INFO "%s : Using%s" with "[%d]%s:%s" per interface (bootstrap and NET/Socket).
def _using(host, network, *ifaces):
    return f"{host}:2211:2211 [0] NCCL INFO {network} : Using " + " ".join(f"[{i}]{x}<0>" for i, x in enumerate(ifaces))


def test_a_host_only_interface_in_a_job_on_two_hosts_is_the_network(tmp_path):
    text = "\n".join([_using("node1", "Bootstrap", "docker0:172.17.0.1"), _using("node2", "Bootstrap", "docker0:172.17.0.1")])
    v = _analysis(tmp_path, "nccl.log", text).verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network") and v.root.rule == "host-only-interface", v.trace


def test_a_host_only_interface_on_one_host_only_leans(tmp_path):
    text = _using("node1", "NET/Socket", "bond0:192.168.1.161", "br-05ab815fa14e:172.19.0.1", "veth6163fba:fe80::b878%veth6163fba")
    v = _analysis(tmp_path, "nccl.log", text).verdict
    assert v.cause == "unknown" and any("host-only-interface" in t for t in v.trace)


def test_ordinary_interfaces_say_nothing(tmp_path):
    text = "\n".join([_using("node1", "NET/Socket", "eth0:10.0.0.1", "ib0:192.168.1.1"), _using("node2", "Bootstrap", "eth0:10.0.0.2")])
    assert not any("host-only-interface" in t for t in _analysis(tmp_path, "nccl.log", text).verdict.trace)


# strerror(EADDRINUSE) as PyTorch <= 1.9's TCPStore and Python's socket raise it.
@pytest.mark.parametrize("line", ["RuntimeError: Address already in use",
                                  "OSError: [Errno 98] Address already in use"])
def test_a_bare_address_in_use_is_the_rendezvous_port(tmp_path, line):
    tb = ("Traceback (most recent call last):\n"
          '  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/rendezvous.py", line 142, in _tcp_rendezvous_handler\n'
          "    store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)\n" + line)
    v = _analysis(tmp_path, "stderr.txt", tb).verdict
    assert (v.category.value, v.cause) == ("config", "port_in_use"), v.trace


# TensorFlow/XLA BFC allocator: "OOM when allocating tensor with shape%s and type %s on %s by allocator %s",
# "Allocator (%s) ran out of memory trying to allocate %s".
@pytest.mark.parametrize("line,cause", [
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,2016,9,9] "
     "and type float on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc", "gpu_oom"),
    ("2026-12-01 10:00:00.000001: W external/xla/xla/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out "
     "of memory trying to allocate 16.00GiB (rounded to 17179869184)requested by op", "gpu_oom"),
])
def test_a_tensorflow_gpu_allocation_failure_is_gpu_memory(tmp_path, line, cause):
    v = _analysis(tmp_path, "train.log", line).verdict
    assert (v.category.value, v.cause) == ("config", cause), v.trace


def test_a_tensorflow_cpu_allocation_failure_is_not_gpu_memory(tmp_path):
    line = ("  (0) Resource exhausted: OOM when allocating tensor with shape[100,4096] and type float on "
            "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu")
    assert _analysis(tmp_path, "train.log", line).verdict.cause != "gpu_oom"


# ENOMEM from a system call (CPython OSError errno 12), here os.fork() starting DataLoader workers.
def test_enomem_starting_workers_is_host_memory(tmp_path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3.10/multiprocessing/popen_fork.py", line 66, in _launch\n'
          "    self.pid = os.fork()\n"
          "OSError: [Errno %d] %s" % (12, "Cannot allocate memory"))
    v = _analysis(tmp_path, "stderr.txt", tb).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom"), v.trace


def test_no_visible_gpu_is_the_device_mapping(tmp_path):
    # c10/cuda/CUDAFunctions.cpp: TORCH_CHECK(count, "No CUDA GPUs are available")
    tb = ('Traceback (most recent call last):\n  File "/w/train.py", line 5, in <module>\n'
          "    torch.cuda.set_device(args.local_rank)\nRuntimeError: No CUDA GPUs are available")
    v = _analysis(tmp_path, "stderr.txt", tb).verdict
    assert (v.category.value, v.cause) == ("config", "device_mapping"), v.trace
