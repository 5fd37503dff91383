"""Generate postmortem/knowledge/catalogs/pytorch.json: the PyTorch messages a failed
distributed job prints (c10d watchdog and stores, DataLoader, torchrun/elastic, the CUDA
caching allocator, device mismatch) with their readings.

Upstream: the torch 2.13.0 wheel (/opt/wheels/torch-2.13.0+cpu-...whl): its Python sources
and the strings of torch/lib/lib{torch_cpu,torch_python,c10}.so (fmt templates such as
"DataLoader worker (pid {}) is killed by signal: {}. ").  The CUDA/NCCL-only texts are not
in a CPU wheel; those entries name their file in https://github.com/pytorch/pytorch at
commit cf1380dfb6c8552c8cdb791a85a89499775ad409 and are checked against a checkout when one
is given.  Every entry's fixed words must occur in its source, or this script fails.

A template uses the source's own notation: `{}` (fmt / f-string / a c10::str argument) is
any text, `{d}` a number.

Re-run:
    python tools/catalogs/gen_pytorch.py /opt/wheels/torch-2.13.0+cpu-*.whl [pytorch-checkout] \
        > postmortem/knowledge/catalogs/pytorch.json
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from printf import TEXT  # noqa: E402

PYTORCH_COMMIT = "cf1380dfb6c8552c8cdb791a85a89499775ad409"
WHEEL = "wheel"
CPYTHON = "multiprocessing/reduction.py"  # CPython's stdlib: torch.multiprocessing passes fds with it
PGNCCL = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
ALLOC = "c10/cuda/CUDACachingAllocator.cpp"
NCCLUTILS = "torch/csrc/distributed/c10d/NCCLUtils.hpp"
CUDAFUNCS = "c10/cuda/CUDAFunctions.cpp"

# (id, family, source, template, cause, strength, why).  cause 'context': says what happened,
# not why (every timeout is context: the collective-timeout rule reads who was late).
# strength 'specific' = one clear reading; 'subsystem' = a class of failures.
ENTRIES: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    # c10d: NCCL watchdog
    ("pt.watchdog_timeout", "c10d", PGNCCL, "Watchdog caught collective operation timeout: {} ran for {d} milliseconds before timing out.",
     "context", "subsystem", "a collective waited past the process-group timeout: why it waited is elsewhere"),
    ("pt.heartbeat_timeout", "c10d", PGNCCL, "Heartbeat monitor timed out! Process will be terminated after dumping debug info.",
     "context", "subsystem", "the watchdog thread itself stopped (stuck in a NCCL/CUDA call)"),
    ("pt.watchdog_stuck", "c10d", PGNCCL, "ProcessGroupNCCL's watchdog got stuck for {d} seconds without making progress in monitoring enqueued collectives.",
     "context", "subsystem", "the watchdog was blocked in a NCCL/CUDA API call"),
    ("pt.nccl_ops_failed", "c10d", PGNCCL, "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
     "context", "subsystem", "the process is taken down after a NCCL failure: fallout"),
    ("pt.nccl_error_in", "c10d", NCCLUTILS, "NCCL error in: {}:{d}, {}",
     "context", "subsystem", "a NCCL call failed: the ncclResult_t text and the NCCL WARN lines say why"),
    ("pt.nccl_uniqueid_store", "c10d", PGNCCL, "is setting up NCCL communicator and retrieving ncclUniqueId from [{d}] via c10d key-value store by key '{}', but store->get('{}') got error: {}",
     "context", "subsystem", "a rank could not get the NCCL id from the store: rank 0 absent, late or unreachable"),
    # c10d: collective desync (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    ("pt.collective_mismatch", "c10d", WHEEL, "Detected mismatch between collectives on ranks. Rank {d} is running collective: {}",
     "collective_desync", "specific", "ranks issued different collectives: the job's own control flow diverged (causes.toml collective_desync)"),
    # c10d: the Gloo backend (third_party/gloo, compiled into libtorch_cpu.so).  pair.cc checks
    # each received message against the size this rank's own operation expects: a peer that
    # sent more bytes ran a different collective or the same one with other sizes.
    ("pt.gloo_size_mismatch", "c10d", WHEEL, "Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?",
     "collective_desync", "specific", "gloo transport/tcp/pair.cc: a peer's message is larger than this rank's matching operation: the ranks called different collectives or sizes"),
    # ProcessGroupGloo.cpp wraps any failure of the full-mesh connect at process-group setup;
    # gloo's pair.cc says why ("timed out connecting: SO_ERROR: <strerror>"); the errno text
    # reads it (ERRNO_READINGS: no route / unreachable / timed out = the network path).
    ("pt.gloo_connect_full_mesh", "c10d", WHEEL, "Gloo connectFullMesh failed with {}",
     "nccl_network", "subsystem", "the ranks could not open their TCP pairs at process-group setup: an interface (GLOO_SOCKET_IFNAME) or route the peers cannot use, or a peer gone"),
    # c10d: stores and sockets
    ("pt.store_client_timeout", "c10d", WHEEL, "The client socket has timed out after {} while trying to connect to ({}, {}).",
     "nccl_network", "subsystem", "the TCPStore master could not be reached"),
    ("pt.store_connect_failed", "c10d", WHEEL, "The client socket has failed to connect to {} {}.",
     "context", "subsystem", "a rank could not reach the store's address: the errno says why (unreachable or no answer: the network; refused: nothing listening yet)"),
    ("pt.store_connect_failed_any", "c10d", WHEEL, "The client socket has failed to connect to any network address of ({}, {}).",
     "context", "subsystem", "a rank could not reach the store's address on any of its addresses"),
    # c10d/socket.cpp SocketConnectOp::tryConnect: getaddrinfo(3) failed for the store's host name
    # (recordError -> C10D_WARNING, then the whole lookup is retried until the connect timeout).
    ("pt.store_addr_unresolved", "c10d", WHEEL, "The {}network addresses of ({}, {}) cannot be retrieved (gai error: {} - {}).",
     "nccl_network", "subsystem", "the store's host name did not resolve on this host (a wrong or mangled MASTER_ADDR, a resolver or search list that does not know it): the rank cannot reach the store"),
    # SocketConnectOp::tryConnect: connect(2) ended in ETIMEDOUT (C10D_WARNING, retried): the kernel
    # resent its SYN tcp_syn_retries times and got no answer at all -- no SYN-ACK (a listener), no RST
    # (a live host without one: ECONNREFUSED, retried silently), no ICMP unreachable (EHOSTUNREACH).
    ("pt.store_syn_unanswered", "c10d", WHEEL, "The server socket on {} has timed out, will retry.",
     "nccl_network", "subsystem", "connect(2) to the store's address got no answer at all: packets to or from it are dropped (a firewall DROP, no route back, an address no live host answers for)"),
    ("pt.store_listen_failed", "c10d", WHEEL, "The server socket has failed to listen on any local network address.",
     "port_in_use", "subsystem", "the store could not bind: MASTER_PORT in use (a leftover or other job) or no address"),
    # c10d/socket.cpp SocketListenOp: C10D_WARNING("The server socket has failed to {bind to|listen on} {} {}.",
    # address, error) where error is "(errno: 98 - Address already in use)": ERRNO_READINGS read it.
    ("pt.store_bind_failed", "c10d", WHEEL, "The server socket has failed to bind to {} {}.",
     "context", "subsystem", "the store's server could not bind its address: the errno says why (EADDRINUSE: the port is taken)"),
    ("pt.store_listen_on_failed", "c10d", WHEEL, "The server socket has failed to listen on {} {}.",
     "context", "subsystem", "the store's server could not listen on its address: the errno says why"),
    ("pt.store_wait_timeout", "c10d", WHEEL, "wait timeout after {d}ms, keys: {}",
     "context", "subsystem", "a store wait timed out: some rank did not arrive (late, dead or unreachable)"),
    ("pt.store_recv_closed", "c10d", WHEEL, "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?",
     "context", "subsystem", "the store's server went away: usually rank 0 died first"),
    ("pt.socket_timeout", "c10d", WHEEL, "Socket Timeout",
     "nccl_network", "subsystem", "a c10d socket operation timed out"),
    ("pt.gloo_connection_closed", "c10d", WHEEL, "Connection closed by peer ",
     "context", "subsystem", "a Gloo peer closed its connection: usually the peer died"),
    ("pt.gloo_timeout", "c10d", WHEEL, "Timed out waiting {d}ms for {} operation",
     "context", "subsystem", "a Gloo collective timed out"),
    ("pt.dist_network_error", "c10d", WHEEL, "DistNetworkError",
     "nccl_network", "subsystem", "c10d reported a network error"),
    ("pt.dist_store_error", "c10d", WHEEL, "DistStoreError",
     "context", "subsystem", "a c10d store operation failed"),
    # DataLoader
    ("pt.dataloader_timeout", "dataloader", WHEEL, "DataLoader timed out after {} seconds",
     "dataloader_worker_crash", "subsystem", "no batch within the DataLoader timeout: workers stuck or too slow"),
    ("pt.dataloader_worker_signal", "dataloader", WHEEL, "DataLoader worker (pid {}) is killed by signal: {}. ",
     "dataloader_worker_crash", "specific", "a DataLoader worker died of a signal (the signal says more)"),
    ("pt.dataloader_exited", "dataloader", WHEEL, "DataLoader worker (pid(s) {}) exited unexpectedly",
     "dataloader_worker_crash", "subsystem", "a DataLoader worker exited"),
    # torch/csrc/DataLoader.cpp's SIGCHLD check: a worker that exited with a non-zero code
    ("pt.dataloader_exit_code", "dataloader", WHEEL, "DataLoader worker (pid {}) exited unexpectedly with exit code {}. "
     "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.",
     "dataloader_worker_crash", "subsystem", "a DataLoader worker exited with a non-zero code; its own error went to its stderr"),
    ("pt.dataloader_bus_error", "dataloader", WHEEL, "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "shm_exhausted", "specific", "a worker touched shared memory past what /dev/shm holds"),
    ("pt.dataloader_segfault", "dataloader", WHEEL, "ERROR: Unexpected segmentation fault encountered in worker.",
     "dataloader_worker_crash", "specific", "a worker crashed in dataset code or a native library"),
    ("pt.shm_alloc_failed", "dataloader", WHEEL, "unable to allocate shared memory(shm) for file <{}>",
     "shm_exhausted", "specific", "a shared-memory segment could not be allocated"),
    ("pt.shm_open_failed", "dataloader", WHEEL, "unable to open shared memory object <{}> in read-write mode: {} ({d})",
     "context", "subsystem", "aten MapAllocator could not shm_open a tensor's shared-memory file: the strerror says why"),
    ("pt.shm_write_failed", "dataloader", WHEEL, "unable to write to file <{}>",
     "shm_exhausted", "subsystem", "writing a shared-memory file failed (the errno says why)"),
    ("pt.too_many_open_files", "dataloader", WHEEL, "Too many open files. Communication with the workers is no longer possible.",
     "fd_limit", "specific", "the open-files limit ran out (file_descriptor sharing strategy)"),
    ("pt.ancdata", "dataloader", CPYTHON, "received {d} items of ancdata",
     "fd_limit", "specific", "file descriptors passed between processes were dropped (open-files limit)"),
    # torchrun / elastic
    ("pt.elastic_root_cause", "elastic", WHEEL, "Root Cause (first observed failure):",
     "context", "subsystem", "torchrun's summary: names the first rank that failed"),
    ("pt.elastic_child_failed", "elastic", WHEEL, "ChildFailedError",
     "context", "subsystem", "torchrun reports a failed child: the child's own error says why"),
    ("pt.elastic_exitcode", "elastic", WHEEL, "failed (exitcode: {}) local_rank: {} (pid: {}) of binary: {}",
     "context", "subsystem", "a worker exited with an error code"),
    ("pt.elastic_sigterm", "elastic", WHEEL, "closing signal {}",
     "context", "subsystem", "torchrun stops the surviving workers: fallout"),
    ("pt.rendezvous_timeout", "elastic", WHEEL, "RendezvousTimeoutError",
     "context", "subsystem", "not all nodes joined the rendezvous in time"),
    # torch/distributed/elastic/rendezvous/utils.py parse_rendezvous_endpoint: the agent checks the
    # --master-addr/--rdzv-endpoint it was given before it connects; a host with characters outside
    # [\w.:-] (a CR from a CRLF hostfile, a quote, a space) or a port outside 0-65535 can name no store.
    # The template stops at the endpoint: a CR inside it ends the line where the bundle's reader
    # splits (universal newlines), so the rest of the sentence is on the next line.
    ("pt.rdzv_endpoint_bad_host", "elastic", WHEEL, "The hostname of the rendezvous endpoint '{}",
     "nccl_network", "specific", "the rendezvous (store) address the launcher was given is no host name or address (a CR from a CRLF hostfile, quotes, spaces): this node can never reach the store"),
    ("pt.rdzv_endpoint_bad_port", "elastic", WHEEL, "The port number of the rendezvous endpoint '{}",
     "nccl_network", "specific", "the rendezvous (store) port the launcher was given is no port number: this node can never reach the store"),
    ("pt.rendezvous_closed", "elastic", WHEEL, "The rendezvous '{}' is closed, terminating pending rendezvous.",
     "context", "subsystem", "the rendezvous was closed by another node"),
    # CUDA caching allocator and CUDA errors as PyTorch prints them
    ("pt.cuda_oom", "allocator", ALLOC, "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is free.",
     "gpu_oom", "specific", "the caching allocator could not get device memory"),
    ("pt.cuda_oom_short", "allocator", ALLOC, "CUDA out of memory. Tried to allocate {}",
     "gpu_oom", "specific", "the caching allocator could not get device memory"),
    ("pt.cpu_alloc_failed", "allocator", WHEEL, "DefaultCPUAllocator: can't allocate memory: you tried to allocate {d} bytes. Error code {d} ({})",
     "host_oom", "specific", "c10/core/impl/alloc_cpu.cpp: posix_memalign returned ENOMEM: the process could not get host memory (RAM exhausted, or a ulimit -v / cgroup limit; a limit in the bundle says which)"),
    ("pt.cuda_async_note", "cuda", "c10/cuda/CUDAException.cpp", "CUDA kernel errors might be asynchronously reported at some other API call",
     "context", "subsystem", "the reported call is not necessarily the failing one"),
    # c10/cuda CUDAFunctions.cpp device_count_ensure_non_zero: TORCH_CHECK(count, "No CUDA GPUs are available")
    ("pt.no_cuda_gpus", "device", WHEEL, "No CUDA GPUs are available",
     "device_mapping", "specific", "the process sees no GPU (CUDA_VISIBLE_DEVICES, a container started without GPUs)"),
    # c10/cuda CUDAFunctions.cpp device_count_impl: cudaGetDeviceCount returned
    # cudaErrorInsufficientDriver; with a driver present its version is printed, else "no driver".
    ("pt.cuda_driver_too_old", "device", CUDAFUNCS, "The NVIDIA driver on your system is too old (found version {d}).",
     "cuda_driver_mismatch", "specific", "the driver supports an older CUDA than the runtime this PyTorch build ships (cudaErrorInsufficientDriver)"),
    ("pt.no_nvidia_driver", "device", CUDAFUNCS, "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from",
     "device_mapping", "specific", "the process sees no NVIDIA driver: none installed, or a container started without the GPU runtime"),
    # The job's own misuse, named by the check that caught it (family "misuse").  Each text is
    # printed only by a check of the job's model, data or checkpoint against itself; no
    # network, driver or limit failure reaches it, so one line is a strong app_error sign.
    # DDP's Reducer (torch/csrc/distributed/c10d/reducer.cpp mark_variable_ready): a parameter's
    # gradient arrived twice in one backward (a parameter used outside forward, reentrant
    # activation checkpointing with find_unused_parameters, a module shared by two passes).
    ("pt.ddp_variable_ready_twice", "misuse", WHEEL, "Expected to mark a variable ready only once. ",
     "app_error", "specific", "DDP's reducer saw one parameter's gradient twice in one backward: the model's use of its parameters (a parameter used outside forward, reentrant checkpointing with find_unused_parameters, a module shared by two passes)"),
    # Autograd anomaly mode (torch/csrc/autograd/engine.cpp validate_outputs under
    # torch.autograd.set_detect_anomaly(True)): a backward function produced NaN.
    ("pt.anomaly_nan_output", "misuse", WHEEL, "Function '{}' returned nan values in its {d}th output.",
     "app_error", "specific", "the job's computation produced NaN in backward (its data or numerics: log(0), division by zero, an overflowing loss); the job enabled anomaly detection, which raised it"),
    # torch/optim/optimizer.py Optimizer.load_state_dict (and the C++ optimizer): a checkpoint's
    # optimizer state does not fit the optimizer the job built (other model, other sharding,
    # another world size for a sharded optimizer).
    ("pt.optim_state_group_count", "misuse", WHEEL, "loaded state dict has a different number of parameter groups",
     "app_error", "specific", "the optimizer state loaded from a checkpoint belongs to another model or sharding than the job built"),
    ("pt.optim_state_group_size", "misuse", WHEEL, "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
     "app_error", "specific", "the optimizer state loaded from a checkpoint belongs to another model or sharding than the job built (a sharded optimizer resumed with another world size)"),
    # DDP's constructor (torch/csrc/distributed/c10d/comm.cpp verify_params_across_processes):
    # rank 0 broadcasts its parameters' shapes and every rank compares its own.  c10::str
    # pieces: "[", rank, "]: params[", i, "] in this process", " with sizes ", sizes, " appears ...".
    ("pt.ddp_param_shape_mismatch", "misuse", WHEEL, "] in this process{} appears not to match sizes of the same param in process 0.",
     "app_error", "specific", "the ranks built different models (a config, checkout or code that differs between them): DDP's constructor compared each parameter's shape with rank 0's"),
    # nn.Module.load_state_dict (torch/nn/modules/module.py): the checkpoint's keys or shapes are
    # not the model's (another model, config or version of it).
    ("pt.state_dict_load_errors", "misuse", WHEEL, "Error(s) in loading state_dict for {}:",
     "app_error", "specific", "a checkpoint of another model (other keys or parameter shapes) was loaded into the job's model"),
    ("pt.state_dict_size_mismatch", "misuse", WHEEL, "size mismatch for {}: copying a param with shape {} from checkpoint, the shape in current model is {}.",
     "app_error", "specific", "a checkpoint of another model (other keys or parameter shapes) was loaded into the job's model"),
    # caffe2/serialize/inline_container.cc PyTorchStreamReader::init -> valid("reading zip
    # archive"): c10::str("PytorchStreamReader failed ", what, info, ": ", mz_zip_get_error_string).
    # torch.load (torch/serialization.py) takes the zip reader only for a file that starts with
    # the zip magic (_is_zipfile), and torch.save writes the archive's central directory LAST
    # (miniz mz_zip_writer_finalize_archive): a file that begins like a checkpoint but has no
    # end record was cut short -- a save still being written (read before the writer finished),
    # killed or out of space while writing, or a partial copy.  The file the job loads is its
    # own (config); miniz's other reader errors ('file read failed') stay unread: a reader's own
    # I/O says nothing about the file.  Motivated by fixtures/validation25/lab-a/
    # lab7-rank1-reads-best-ckpt-while-rank0-writes.
    ("pt.checkpoint_truncated", "checkpoint", WHEEL, "PytorchStreamReader failed {}failed finding central directory",
     "app_error", "specific", "torch.load met a checkpoint whose zip end record is missing: the file was cut short (read while still being saved, a save killed or out of space, a partial copy) -- the job's checkpoint handling"),
    # caffe2/serialize/inline_container.cc PyTorchStreamWriter: torch.save checks the target's
    # directory before it writes; a missing one is the job's path (a volume not mounted on this
    # host, a directory another rank has not made yet), not a storage fault.
    ("pt.save_parent_dir_missing", "checkpoint", WHEEL, "Parent directory {} does not exist.",
     "app_error", "specific", "torch.save was given a path whose directory does not exist on this host: the job's checkpoint path (a shared volume not mounted here, a directory not created before the save) -- not a storage fault"),
    # ATen shape checks (TORCH_CHECK in LinearAlgebra.cpp, ExpandUtils.cpp, Convolution.cpp,
    # TensorShape.cpp cat, LossNLL.cpp) and autograd's engine: the tensors the job's code built
    # do not fit the operation it called on them.
    ("pt.matmul_shapes", "misuse", WHEEL, "mat1 and mat2 shapes cannot be multiplied ({d}x{d} and {d}x{d})",
     "app_error", "specific", "a matrix product on tensors of incompatible shapes: the model's layer sizes do not fit its input"),
    ("pt.matmul_dtypes", "misuse", WHEEL, "expected m1 and m2 to have the same dtype, but got: {} != {}",
     "app_error", "specific", "a matrix product of tensors of two dtypes: the job mixes precisions (a half model fed float input, or the reverse)"),
    ("pt.broadcast_shapes", "misuse", WHEEL, "The size of tensor a ({d}) must match the size of tensor b ({d}) at non-singleton dimension {d}",
     "app_error", "specific", "an elementwise op on tensors whose shapes do not broadcast: the job's tensors do not fit each other"),
    ("pt.conv_channels", "misuse", WHEEL, "Given groups={d}, weight of size {}, expected input{} to have {d} channels, but got {d} channels instead",
     "app_error", "specific", "a convolution fed an input with another channel count than its weight: the model does not fit its data"),
    ("pt.cat_sizes", "misuse", WHEEL, "Sizes of tensors must match except in dimension {d}. Expected size {d} but got size {d} for tensor number {d} in the list.",
     "app_error", "specific", "tensors of different sizes concatenated or stacked (uneven samples in a batch, a collate of unequal items)"),
    # ATen's view/reshape (TensorShape.cpp infer_size, computeStride), stack (cat_compute_output_memory
    # _format / check_stack_inputs), expand (ExpandUtils.cpp), TensorIterator's result cast check and the
    # dtype checks of matmul/bmm and a loss's target, and autograd's leaf check: each compares the tensors the
    # job's code built with what the op needs; no network, driver or limit failure reaches them.
    # Real lines: fixtures/lab/torch_misuse2_lines.sh (torch 2.13.0 CPU).
    ("pt.view_shape_invalid", "misuse", WHEEL, "shape '{}' is invalid for input of size {d}",
     "app_error", "specific", "a view/reshape to a shape whose element count is not the tensor's: the job's tensor sizes (batch, sequence, hidden) do not fit its code"),
    ("pt.view_stride", "misuse", WHEEL, "view size is not compatible with input tensor's size and stride",
     "app_error", "specific", "view() on a non-contiguous tensor (after transpose/permute): the job's code must use reshape() or contiguous()"),
    ("pt.stack_sizes", "misuse", WHEEL, "stack expects each tensor to be equal size, but got {} at entry {d} and {} at entry {d}",
     "app_error", "specific", "tensors of different sizes stacked (default_collate of uneven samples, a list of unequal outputs): the job's data or collate"),
    ("pt.expand_size", "misuse", WHEEL, "The expanded size of the tensor ({d}) must match the existing size ({d}) at non-singleton dimension {d}.",
     "app_error", "specific", "an expand/broadcast to a size the tensor cannot take: the job's tensor shapes do not fit each other"),
    ("pt.result_cast", "misuse", WHEEL, "result type {} can't be cast to the desired output type {}",
     "app_error", "specific", "an in-place op or out= whose result dtype cannot be stored in the job's tensor (a float result into an integer tensor)"),
    ("pt.scalar_type", "misuse", WHEEL, "expected scalar type {} but found {}",
     "app_error", "specific", "an op on tensors of two dtypes (a float model fed double or half input, or the reverse): the job's precision handling"),
    ("pt.mat_dtype", "misuse", WHEEL, "mat1 and mat2 must have the same dtype, but got {} and {}",
     "app_error", "specific", "a linear layer or matmul on tensors of two dtypes: the job's input and model precisions differ"),
    ("pt.target_dtype", "misuse", WHEEL, "expected target dtype to be Long or Byte, but got {}",
     "app_error", "specific", "a classification loss given float (or int32) targets: the job's labels have the wrong dtype"),
    ("pt.leaf_inplace", "misuse", WHEEL, "a leaf Variable that requires grad is being used in an in-place operation.",
     "app_error", "specific", "an in-place op on a parameter (a leaf that requires grad) outside torch.no_grad(): the job's code"),
    # torch/serialization.py torch.load: since torch 2.6 weights_only=True by default, and the restricted
    # unpickler refuses any global not allow-listed -- a checkpoint that pickles the job's own objects
    # (a config class, numpy scalars, argparse.Namespace) fails until the job passes weights_only=False
    # or allow-lists them (torch.serialization.add_safe_globals): the job's load call against its torch.
    ("pt.weights_only_load", "checkpoint", WHEEL, "Weights only load failed.",
     "app_error", "specific", "torch.load's weights_only default (torch >= 2.6) refused an object the checkpoint pickles: the job's load call must allow-list it or pass weights_only=False for a trusted file"),
    ("pt.target_out_of_bounds", "misuse", WHEEL, "Target {d} is out of bounds.",
     "app_error", "specific", "a class label outside the model's number of classes: the job's labels or its classifier size"),
    ("pt.no_grad_fn", "misuse", WHEEL, "element {d} of tensors does not require grad and does not have a grad_fn",
     "app_error", "specific", "backward on a tensor outside autograd (computed under no_grad, detached, or from parameters with requires_grad=False)"),
    ("pt.backward_twice", "misuse", WHEEL, "Trying to backward through the graph a second time",
     "app_error", "specific", "backward ran twice over one graph whose saved tensors were already freed: the job's training step"),
    ("pt.inplace_modified", "misuse", WHEEL, "one of the variables needed for gradient computation has been modified by an inplace operation: [",
     "app_error", "specific", "an in-place operation overwrote a tensor autograd saved for backward: the job's model code"),
    # torch/csrc/autograd/engine.cpp validate_outputs: a backward function returned a gradient whose
    # shape does not fit its input ("Function <name> returned an invalid gradient at index i - got
    # [..] but expected shape compatible with [..]").  ATen's own derivatives are generated to fit
    # (tools/autograd/derivatives.yaml), so the function that returns it is a custom
    # torch.autograd.Function's backward (named <Class>Backward) or a custom op's: the job's code.
    # Motivated by fixtures/validation26/lab-a/lab8-rank1-masked-mean-backward-short-batch (found
    # after the eighth sweep's first-seen score).
    ("pt.backward_invalid_gradient", "misuse", WHEEL, "invalid gradient at index {d} - got {} but expected shape compatible with {}",
     "app_error", "specific", "a backward function returned a gradient of the wrong shape: the job's custom autograd.Function (or custom op) computes its gradient for another shape than its input"),
    # DDP's Reducer (torch/csrc/distributed/c10d/reducer.cpp), under static_graph=True: a parameter
    # the recorded first iteration left unused takes part in a later backward ("Your training graph
    # has changed in this iteration ..." -- c10::str pieces, hence the {} between them).  It compares
    # the job's own model and loss with its DDP settings; no network, driver or limit reaches it.
    # (Its sibling raised in the next forward, ensure_prior_reduction_finished's "Expected to have
    # finished reduction in the prior iteration", is messages.toml ddp_unfinished_reduction.)  Seen
    # in validation29 lab11-ddp-static-graph-aux-head-every-10-steps (both ranks, in backward).
    ("pt.ddp_static_graph_changed", "misuse", WHEEL,
     "Your training graph has changed in this iteration, {}compatible with static_graph set to True.",
     "app_error", "specific", "DDP was built with static_graph=True but the job's model used a parameter the first iteration left unused (a head or branch used only on some steps): the job's model and DDP settings"),
    # torch/serialization.py torch.load: mmap=True reads the zip format's records in place; a file
    # saved with _use_new_zipfile_serialization=False (the legacy format) cannot be, and
    # weights_only=True refuses the even older .tar format -- each a check of the job's load call
    # against the file its own tools wrote.  REAL: fixtures/lab/rank_raises_through.sh (mmap_legacy).
    ("pt.load_mmap_legacy_format", "checkpoint", WHEEL,
     "mmap can only be used with files saved with `torch.save({}_use_new_zipfile_serialization=True)",
     "app_error", "specific", "torch.load(mmap=True) of a checkpoint saved in the legacy format (_use_new_zipfile_serialization=False): the job's load call and the tool that wrote the file disagree"),
    ("pt.load_weights_only_legacy_tar", "checkpoint", WHEEL,
     "Cannot use ``weights_only=True`` with files saved in the legacy .tar format.",
     "app_error", "specific", "torch.load(weights_only=True) of a checkpoint in the pre-1.0 .tar format: the job's load call and its old checkpoint disagree"),
    # torch/distributed/distributed_c10d.py _get_default_group: a collective (or DDP) called
    # before init_process_group in this process -- the job's code or its launch skipped the init.
    ("pt.default_pg_not_initialized", "misuse", WHEEL, "Default process group has not been initialized, please make sure to call init_process_group.",
     "app_error", "specific", "the job called a collective or wrapped DDP in a process that never ran init_process_group (its code, or a launch that skips the init branch)"),
    # torch/nn/parallel/distributed.py DistributedDataParallel.__init__
    ("pt.ddp_no_grad_params", "misuse", WHEEL, "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
     "app_error", "specific", "DDP wrapped a module with every parameter frozen (requires_grad=False): the job's model setup"),
    # device mismatch
    # Raised by an operator's device check (ATen TensorIterator / check_all_same_device): alone
    # it leans to the launch's device mapping; raised in the job's own frames it is the code's
    # placement of its tensors (signals.toml app.exception own_code_readings).
    # torch/nn/parallel data_parallel.py (DataParallel and data_parallel()) and distributed.py
    # (DistributedDataParallel.__init__): the wrapper checks where the module's parameters
    # live against the devices it was given.  A model spread over GPUs (from_pretrained's
    # device_map="auto", a model-parallel split) or moved to another GPU fails these checks.
    ("pt.dp_params_on_other_device", "device", WHEEL,
     "module must have its parameters and buffers on device {} (device_ids[0]) but found one of them on device: {}",
     "device_mapping", "specific", "the model's parameters are not on the GPU the data-parallel wrapper was given (a model spread over GPUs, e.g. device_map='auto', or placed on another GPU)"),
    ("pt.ddp_device_ids_multi_device", "device", WHEEL,
     "DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, but got device_ids {}, output_device {}, and module parameters {}.",
     "device_mapping", "specific", "DDP was given device_ids for a module spread over several devices (or on the CPU)"),
    ("pt.ddp_mixed_device_types", "device", WHEEL,
     "DistributedDataParallel's input module must be on the same type of devices, but input module parameters locate in {}.",
     "device_mapping", "specific", "the module DDP wraps has parameters on the CPU and on a GPU"),
    ("pt.device_mismatch", "device", WHEEL, "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
     "device_mapping", "subsystem", "tensors of one op live on different devices: a device mapping or the job's code"),
    ("pt.device_mismatch_got", "device", WHEEL, "Expected all tensors to be on the same device, but got {}",
     "device_mapping", "subsystem", "tensors of one op live on different devices: a device mapping or the job's code"),
)

# The signal named in a worker-death line refines its reading.
# Keyed by the first word of strsignal()'s text (wrapped log lines keep only that much).
SIGNAL_READINGS = {"Bus": "shm_exhausted", "Killed": "host_oom", "Segmentation": "dataloader_worker_crash",
                   "Aborted": "dataloader_worker_crash"}


# An errno text on a c10d store/socket line reads the failure (c10d/socket.cpp formats the
# errno's name and strerror text into DistNetworkError: "code: -98, name: EADDRINUSE,
# message: address already in use").  Keyed by family; first text found wins.
ERRNO_READINGS = {
    # aten MapAllocator (shared tensors of DataLoader workers, torch.multiprocessing) appends
    # "strerror (errno)" to its shm_open/ftruncate/write failures.
    "dataloader": {"No space left on device": "shm_exhausted", "Too many open files": "fd_limit",
                   "Permission denied": "shm_permissions"},
    "c10d": {"EADDRINUSE": "port_in_use", "ddress already in use": "port_in_use",
             "EHOSTUNREACH": "nccl_network", "o route to host": "nccl_network",
             "ENETUNREACH": "nccl_network", "etwork is unreachable": "nccl_network",
             # connect(2) got no answer at all (SYNs dropped: a firewall, a wrong address or interface)
             "ETIMEDOUT": "nccl_network", "onnection timed out": "nccl_network",
             "Name or service not known": "nccl_network", "emporary failure in name resolution": "nccl_network"},
}

# Errno readings that hold for one entry only (tried before the family's): the same errno means
# different things on different calls.
ERRNO_ENTRY_READINGS = {
    # connect(2) EADDRNOTAVAIL: this host could give the socket no local port (the ephemeral range is
    # used up or reserved: Linux inet_hash_connect) or no source address for the peer's family -- the
    # connecting host's own network state, never the peer's.  On bind(2) the same errno means the
    # address asked for is not this host's (a rendezvous address naming another node): not read there.
    "pt.store_connect_failed": {"EADDRNOTAVAIL": "nccl_network", "annot assign requested address": "nccl_network"},
}

# c10d/socket.cpp SocketListenOp tries every address of the host and only warns
# (C10D_WARNING) for each one that fails; the store fails when all fail ("failed to listen on
# any local network address"), and torch's elastic rendezvous expects a failed bind and
# retries as a client (elastic/rendezvous/c10d_rendezvous_backend.py).  On these per-attempt
# warnings the errno names the failure but is one weak sign, not a verdict.
ERRNO_ATTEMPT_ENTRIES = ["pt.store_bind_failed", "pt.store_listen_on_failed"]

# Entries c10d goes on after (rules/catalog.py reads none of their lines that the job's progress
# follows in the same file: the retry succeeded, the line is no sign of a later failure):
# SocketConnectOp::tryConnect warns "The client socket has failed to connect to {} {}." (recordError
# -> C10D_WARNING) for each ADDRESS that fails and tries the next; TCPStore's client retries the
# whole connect after "failed to connect to any network address of" ("TCP client failed to
# connect/validate to host ... - retrying (try=0, ..."); the bind/listen warnings above likewise.
# REAL: fixtures/lab/neigh_history (a master up 5 s late: errno 113 once, then six steps).
RETRIED_ENTRIES = ["pt.store_connect_failed", "pt.store_connect_failed_any", "pt.store_bind_failed",
                   "pt.store_listen_on_failed", "pt.store_addr_unresolved", "pt.store_syn_unanswered"]

# Every per-attempt warning is one weak sign whatever its errno (audit 11 H1): c10d prints it for an
# attempt and retries until the connect timeout; only the client's final "The client socket has timed
# out after ... while trying to connect" says the connect failed (pt.store_client_timeout).
ERRNO_ATTEMPT_ENTRIES = ERRNO_ATTEMPT_ENTRIES + [e for e in RETRIED_ENTRIES if e not in ERRNO_ATTEMPT_ENTRIES]

# What a process can print only once its store connect succeeded (rules/catalog.py drops the retried
# attempts of a file that shows one later, audit 11 H1): init_process_group returns only after the
# store was reached, and everything below runs after it -- the job's steps, NCCL (its unique id comes
# through the store), gloo's full-mesh connect (pair addresses exchanged through the store) and its
# pairs' errors, a collective's watchdog, a store get of the NCCL unique id that timed out.
STORE_REACHED_KINDS = ["msg.rank_step", "msg.progress_bar", "msg.peer_closed_connection", "msg.nccl_connection_closed", "msg.watchdog_timeout",
                       "msg.watchdog_exception_at_work", "msg.heartbeat_monitor_timeout", "msg.nccl_uniqueid_store_timeout",
                       "msg.nccl_mismatched_collective", "msg.gloo_loopback_fallback", "msg.gloo_connect_unreachable",
                       "msg.gloo_address_family_mismatch", "msg.gloo_device_address_not_found",
                       "msg.gloo_established_socket_error", "msg.gloo_connect_failed", "msg.gloo_timeout"]
STORE_REACHED_KIND_PREFIXES = ["nccl."]   # any line NCCL itself prints (postmortem/parsers/nccl.py)

# The connect's own final failure: SocketConnectOp::throwTimeoutError "The client socket has timed out
# after {} while trying to connect to ({}, {})." ends the retries.  An errno-read attempt of the same
# file before it is why the connect failed, and reads as specifically as the errno says (rules/catalog.py).
CONNECT_FAILED_ENTRIES = ["pt.store_client_timeout"]
# ... and the other lines that end it: TCPStore.cpp's last try ("TCP client failed to connect/validate
# to host {}:{} - timed out (try=..."; '- retrying' before it is one more attempt) and the DistNetworkError
# / DistStoreError the process then raises (torch/csrc/distributed/c10d: a c10::DistError subclass).
CONNECT_FAILED_TEXT = [r"TCP client failed to connect/validate to host \S{1,260} - timed out", r"\bDist(?:Network|Store)Error\b"]


def template_to_regex(t: str) -> str:
    parts = re.split(r"(\{d\}|\{\})", t)
    out = []
    for i, p in enumerate(parts):
        if p == "{d}":
            out.append(r"-?\d{1,20}")
        elif p == "{}":
            out.append(TEXT)
        elif i == len(parts) - 1 and i and len(p.strip()) <= 3 and not re.search(r"\w", p):
            out.append(f"(?:{re.escape(p.strip())})?")  # closing punctuation: real logs cut lines short
        else:
            out.append(re.escape(p.rstrip() if i == len(parts) - 1 else p))
    return "".join(out)


def words(t: str) -> list[str]:
    return [w.strip() for w in re.split(r"\{d\}|\{\}", t) if len(w.strip()) >= 4]


def python_strings(src: str) -> list[str]:
    """Every string a Python source spells, adjacent literals joined, f-string fields as {}."""
    out = []
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return [src]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
    return out


def wheel_text(wheel: str) -> str:
    """Python sources plus printable strings of the libraries: what the wheel can print."""
    chunks = []
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(".py") and name.startswith(("torch/utils/data", "torch/distributed", "torch/multiprocessing",
                                                            "torch/nn/parallel", "torch/optim",
                                                            "torch/nn/modules/module.py", "torch/serialization.py")):
                chunks.extend(python_strings(z.read(name).decode("utf-8", "replace")))
            elif re.search(r"torch/lib/lib(torch_cpu|torch_python|c10)\.so$", name):
                data = z.read(name)
                chunks.extend(m.group(0).decode("latin-1") for m in re.finditer(rb"[\x20-\x7e]{6,}", data))
    return "\n".join(chunks)


def main(argv: list[str]) -> int:
    wheel = argv[1]
    checkout = Path(argv[2]) if len(argv) > 2 else None
    text = wheel_text(wheel)
    version = re.search(r"torch-([\w.+]+?)-cp", Path(wheel).name).group(1)
    entries = []
    for eid, family, source, template, cause, strength, why in ENTRIES:
        if source == WHEEL:
            fixed = template.replace("{d}", "{}").split("{}")
            missing = [w for w in fixed if w.strip() and w.strip() not in text]
            if missing:  # fmt templates are stored whole; a f-string or c10::str keeps its pieces
                missing = [w for w in words(template) if w not in text]
            if missing:
                raise SystemExit(f"{eid}: not in the wheel: {missing}")
            verified = f"torch {version} wheel"
        elif source == CPYTHON:
            src = (Path(os.__file__).parent / source).read_text()
            if "items of ancdata" not in src:
                raise SystemExit(f"{eid}: not in {source}")
            verified = f"CPython {sys.version.split()[0]} {source}"
        elif checkout is not None:
            src = (checkout / source).read_text(errors="replace")
            missing = [w for w in words(template) if w not in src]
            if missing:
                raise SystemExit(f"{eid}: not in {source}: {missing}")
            verified = f"pytorch/pytorch {source}"
        else:
            verified = ""
        entries.append({"id": eid, "family": family, "template": template, "regex": template_to_regex(template),
                        "key": max(words(template) or [template], key=len),
                        "source": source if source != WHEEL else f"torch {version} wheel",
                        "verified_in": verified, "cause": cause, "strength": strength, "why": why})
    out = {"catalog": "pytorch", "upstream": f"torch {version} wheel; https://github.com/pytorch/pytorch @ {PYTORCH_COMMIT[:12]}",
           "version": version, "commit": PYTORCH_COMMIT, "generator": "tools/catalogs/gen_pytorch.py",
           "signal_readings": SIGNAL_READINGS, "errno_readings": ERRNO_READINGS, "errno_entry_readings": ERRNO_ENTRY_READINGS,
           "errno_attempt_entries": ERRNO_ATTEMPT_ENTRIES,
           "retried_entries": RETRIED_ENTRIES, "store_reached_kinds": STORE_REACHED_KINDS,
           "store_reached_kind_prefixes": STORE_REACHED_KIND_PREFIXES,
           "connect_failed_entries": CONNECT_FAILED_ENTRIES, "connect_failed_text": CONNECT_FAILED_TEXT, "entries": entries}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
