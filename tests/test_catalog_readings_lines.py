"""Readings of lines that say their cause outright (issue 13, the misses "told by their lines"):
each built from the program that prints the message, each tested on a real line or on the
upstream format string, with a near miss that must read otherwise."""
from __future__ import annotations

import json
from pathlib import Path

from postmortem import knowledge
from postmortem.knowledge import catalog as C

ROOT = Path(__file__).resolve().parent.parent
K = knowledge.load()


# --- NCCL's own kernel calls (tools/catalogs/gen_nccl.py CUDA_READINGS) ---------------------

def test_nccl_kernel_lookup_failure_reads_as_an_nccl_build_without_this_gpu():
    # Real lines: NVIDIA/nccl#1372 (NCCL built for sm_80 run on H100) and pytorch/pytorch#152077
    # (NCCL 2.14 on an RTX 5090; that NCCL prints no file:line).
    for line in ("gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'",
                 "4d1a2ae696c8:50555:50555 [0] NCCL WARN Cuda failure 'named symbol not found'"):
        m = C.match_nccl(line)
        assert m and m.cause == "nccl_version_old" and m.strength == "specific", line
        assert "cudaErrorSymbolNotFound" in m.detail
    # The other texts cudaFuncGetAttributes gives for a binary without this architecture.
    for text in ("invalid device function", "no kernel image is available for execution on the device"):
        m = C.match_nccl(f"h:1:2 [0] enqueue.cc:47 NCCL WARN Cuda failure '{text}'")
        assert m and m.cause == "nccl_version_old", text


def test_other_cuda_errors_in_nccl_keep_their_readings():
    # A sticky fault surfacing in NCCL's next call is still the job's kernel, weakly.
    m = C.match_nccl("h:1:2 [0] enqueue.cc:58 NCCL WARN Cuda failure 'an illegal memory access was encountered'")
    assert m and m.cause == "app_error" and m.strength == "subsystem"
    # Inside a transport the transport's own setup failed: its subsystem reads it, whatever the text.
    m = C.match_nccl("h:1:2 [0] transport/p2p.cc:300 NCCL WARN Cuda failure 'named symbol not found'")
    assert m and m.cause == "nccl_p2p"


def test_nccl_cuda_readings_name_real_cuda_errors_and_causes():
    data = json.loads((ROOT / "postmortem/knowledge/catalogs/nccl.json").read_text())
    readings = data["cuda_readings"]["readings"]
    assert readings, "the generator wrote no CUDA readings"
    for name, cause in readings.items():
        assert C.cuda_error(name) is not None, name
        assert cause in K.causes, cause


# --- PyTorch c10d store sockets and data-parallel device checks (gen_pytorch.py) ------------

def test_store_bind_failure_reads_its_errno():
    # A real line (wenet-e2e/wekws#93: torchrun --standalone on a taken port); the template
    # "The server socket has failed to bind to {} {}." is in the torch 2.13 wheel's libtorch_cpu.so.
    m = C.match_message("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29400 "
                        "(errno: 98 - Address already in use).", ("pytorch",))
    # a per-address warning: torch's elastic rendezvous expects it and retries as a client, so
    # the errno names the cause but the line is one weak sign (audit 4 M3)
    assert m and m.entry.id == "pt.store_bind_failed" and m.cause == "port_in_use" and m.strength == "subsystem"
    # the store's own failure with the errno (a DistNetworkError, lab3-master-port-taken) is strong
    m = C.match_message("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
                        "network address. port: 29534, useIpv6: false, code: -98, name: EADDRINUSE, message: "
                        "address already in use", ("pytorch",))
    assert m and m.cause == "port_in_use" and m.strength == "specific"
    # Another errno is not a taken port: the entry alone says only that the bind failed.
    m = C.match_message("[W socket.cpp:401] [c10d] The server socket has failed to bind to 10.1.1.1:29400 "
                        "(errno: 99 - Cannot assign requested address).", ("pytorch",))
    assert m and m.entry.id == "pt.store_bind_failed" and m.cause == "context"


def test_data_parallel_device_checks_read_as_device_mapping():
    # torch/nn/parallel/data_parallel.py's f-string, as a real report printed it (huggingface/transformers#21736).
    m = C.match_message("RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
                        "but found one of them on device: cuda:1", ("pytorch",))
    assert m and m.cause == "device_mapping" and m.strength == "specific"
    # distributed.py's check, formatted the way DistributedDataParallel.__init__ formats it.
    m = C.match_message("ValueError: DistributedDataParallel device_ids and output_device arguments only work with "
                        "single-device/multiple-device GPU modules or CPU modules, but got device_ids [1], "
                        "output_device 1, and module parameters {device(type='cuda', index=0), "
                        "device(type='cuda', index=1)}.", ("pytorch",))
    assert m and m.cause == "device_mapping"


# --- messages.toml: nvidia-docker 1.x and accelerate -----------------------------------------

def _message(mid: str):
    return next(m for m in K.messages if m.id == mid)


def test_nvidia_docker_cuda_label_check():
    import re
    rx = re.compile(_message("nvidia_docker_cuda_unsupported").pattern)
    # The plugin's copy of the check capitalises the first word: the text fmt.Errorf formats.
    m = rx.search("Unsupported CUDA version: 8.0 < 7.5")
    assert m and m.group("image_cuda") == "8.0" and m.group("driver_cuda") == "7.5"
    assert not rx.search("CUDA version: 7.5")


def test_accelerate_device_map_guards():
    import re
    rx = re.compile(_message("accelerate_device_map_distributed").pattern)
    # accelerate 1.10.1 accelerator.py's three guards, as its ValueErrors print them.
    for text in ("ValueError: You can't train a model that has been loaded with `device_map='auto'` in any distributed mode.",
                 "ValueError: You can't train a model that has been loaded in 8-bit or 4-bit precision on multiple devices "
                 "in any distributed mode. In order to use 8-bit or 4-bit models ...",
                 "ValueError: You can't train a model that has been loaded in 8-bit or 4-bit precision on a different device "
                 "than the one you're training on."):
        assert rx.search(text), text
    assert not rx.search("ValueError: You can't train a model that has been loaded in 8-bit precision without adapters")


def test_ucx_shared_memory_fifo_failure():
    import re
    m = _message("ucx_mm_fifo_alloc_failed")
    assert m.cause == "shm_exhausted" and m.strength == "strong"
    rx = re.compile(m.pattern)
    # Formatted with the prefix UCX's default log handler adds ("[time] [host:pid:tid] file:line UCX ERROR");
    # the numbers are placeholders.
    assert rx.search("[1700000000.123456] [node1:4242:0] mm_iface.c:818 UCX ERROR mm_iface failed to allocate receive FIFO")
    # UCX's other FIFO (the send side's) and unrelated allocation failures are not this line.
    assert not rx.search("mm_iface failed to allocate receive descriptor")


def test_nccl_kernel_reading_holds_only_where_nccl_calls_its_kernels():
    # The same text from a file that makes no call on NCCL's kernels (cudawrap's driver calls,
    # a transport's setup) is not read as a missing architecture.
    for line in ("h:1:2 [0] misc/cudawrap.cc:120 NCCL WARN Cuda failure 'named symbol not found'",
                 "h:1:2 [0] transport/p2p.cc:300 NCCL WARN Cuda failure 'named symbol not found'"):
        m = C.match_nccl(line)
        assert m and m.cause != "nccl_version_old", line
    m = C.match_nccl("h:1:2 [0] misc/strongstream.cc:272 NCCL WARN Cuda failure 'invalid device function'")
    assert m and m.cause == "nccl_version_old"


def test_nccl_socket_bind_reads_its_errno():
    # include/checks.h SYSCHECK(bind(...), "bind") in misc/socket.cc, as NCCL 2.27+ formats it.
    m = C.match_nccl("h:1:2 [0] misc/socket.cc:137 NCCL WARN Call to bind failed: Address already in use")
    assert m and m.cause == "port_in_use" and m.strength == "specific"
    # Without an errno it names the socket subsystem only, weakly.
    m = C.match_nccl("h:1:2 [0] misc/socket.cc:137 NCCL WARN Call to bind failed: Invalid argument")
    assert m and m.cause == "nccl_network" and m.strength == "subsystem"


def test_pytorch_cuda_driver_checks():
    # c10/cuda/CUDAFunctions.cpp device_count_impl's two texts; the first as a public note quotes
    # it (search index id 56129719833), the second as TORCH_CHECK joins its literals.
    m = C.match_message("RuntimeError: The NVIDIA driver on your system is too old (found version 12080)", ("pytorch",))
    assert m and m.entry.id == "pt.cuda_driver_too_old" and m.cause == "cuda_driver_mismatch"
    m = C.match_message("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                        "and installed a driver from http://www.nvidia.com/Download/index.aspx", ("pytorch",))
    assert m and m.entry.id == "pt.no_nvidia_driver" and m.cause == "device_mapping"


def test_display_driver_versus_cuda_driver_mismatch_is_the_driver_libraries(tmp_path):
    # CUDA driver_types.h on cudaErrorSystemDriverMismatch (803): "a mismatch between the versions
    # of the display driver and the CUDA driver" -- the kernel module against the libcuda the
    # process loads (causes.toml driver_library_mismatch), not a driver older than the runtime
    # (cudaErrorInsufficientDriver, 35).
    by_name = {e["name"]: e for e in json.loads((ROOT / "postmortem/knowledge/catalogs/cuda.json").read_text())["entries"]}
    assert by_name["cudaErrorSystemDriverMismatch"]["cause"] == "driver_library_mismatch"
    assert by_name["CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"]["cause"] == "driver_library_mismatch"
    assert by_name["cudaErrorInsufficientDriver"]["cause"] == "cuda_driver_mismatch"
    from postmortem.run import analyze
    # Real lines, as posted: PyTorch's device count check (c10/cuda/CUDAFunctions.cpp 'Error %d: %s';
    # CompVis/stable-diffusion#439) and Caffe's glog CUDA_CHECK (eric612/MobileNet-YOLO#266).
    for line in ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
                 "calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported "
                 "display driver / cuda driver combination",
                 "Check failed: error == cudaSuccess (803 vs. 0)  system has unsupported display driver / cuda driver "
                 "combination"):
        (tmp_path / "stderr.txt").write_text(line + "\n")
        v = analyze(tmp_path).verdict
        assert (v.category.value, v.cause) == ("config", "driver_library_mismatch"), (line, v.cause, v.trace)


def test_pytorch_device_count_check_carries_the_cuda_error():
    # The same PyTorch text carrying another CUDA error reads that error's own reading (804:
    # forward compatibility on a GPU without it -- a runtime newer than the driver).
    found = C.cuda_errors_in("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
                             "functions before calling NumCudaDevices() that might have already set an error? "
                             "Error 804: forward compatibility was attempted on non supported HW")
    assert [e.name for e in found] == ["cudaErrorCompatNotSupportedOnDevice"]
    assert found[0].cause == "cuda_driver_mismatch"
