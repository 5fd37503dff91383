"""Generate postmortem/knowledge/catalogs/nccl.json: every WARN format string (and every
failure INFO) in NCCL's src/, as a regex, with the subsystem and cause it reads as.

Upstream: https://github.com/NVIDIA/nccl at the tags in TAGS (newest v2.30.7-1, commit
5067397c2676d5aed50042fc39e5c8ee96eb0027; older tags so lines from older NCCLs in real logs
match too).  An entry lists the tags whose source prints it.

Re-run (needs a clone or bare mirror of NVIDIA/nccl with its tags):
    python tools/catalogs/gen_nccl.py /path/to/nccl.git > postmortem/knowledge/catalogs/nccl.json

Reading a message: first the TEXT_RULES (a message whose words say one thing: specific),
else the subsystem of its source file (FILE_RULES: weak, a whole subsystem).  Entries whose
source says nothing about a cause are marked "context".  Entries defined in a generic macro
header (include/checks.h) take the subsystem of the file named in the log line instead.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from printf import first_string_arg, literal_text, longest_literal, printf_to_regex  # noqa: E402

TAGS = ("v2.7.8-1", "v2.14.3-1", "v2.18.6-1", "v2.21.5-1", "v2.24.3-1", "v2.27.3-1", "v2.30.7-1")
NEWEST = "v2.30.7-1"

# Source file -> (subsystem, cause).  First match wins.  Paths are relative to src/.
FILE_RULES: tuple[tuple[str, str, str], ...] = (
    (r"^(transport/net_ib|misc/ibvwrap|misc/ibvsymbols|misc/mlx5dv|include/ibvwrap|include/mlx5)", "ib", "nccl_network"),
    (r"^(transport/net_socket|misc/socket|include/socket|bootstrap|os/linux_socket|os/linux_ipcsocket|misc/ipcsocket)", "socket", "nccl_network"),
    (r"^(transport/coll_net|transport/net\.cc|plugin/net|net\.cc|include/net|plugin/plugin_open|transport/net_v)", "net_plugin", "nccl_network"),
    (r"^(transport/nvls|mnnvl)", "nvls", "nvls_fabric"),
    (r"^transport/p2p", "p2p", "nccl_p2p"),
    (r"^(misc/shmutils|transport/shm|include/shm)", "shm", "shm_exhausted"),
    (r"^graph/", "topology", "context"),
    (r"^(enqueue|misc/argcheck|collectives|include/argcheck|group)", "app_misuse", "app_error"),
    (r"^(include/alloc|allocator|misc/cudawrap|include/cudawrap|mem_manager|misc/strongstream|register/|include/checks)", "cuda_memory", "context"),
    (r"^(proxy|include/proxy)", "proxy", "context"),
    (r"^(init|channel|transport\.cc|dev_runtime|ce_coll|symmetric|scheduler)", "init", "context"),
    (r"^(misc/gdrwrap|include/gdrwrap)", "gdr", "context"),
    (r"^misc/nvmlwrap", "nvml", "context"),
    (r"^(ras/)", "ras", "context"),
    (r"^(os/windows)", "windows", "context"),
    (r"^(gin/|rma/|plugin/gin|plugin/rma|devcomm/)", "device_api", "context"),
    (r"^(misc/utils|include/utils|os/linux\.cc|misc/param|param/|include/param/|debug|include/debug|misc/tuner|plugin/tuner|plugin/profiler|profiler)", "host_env", "context"),
    (r"^(register\.cc)", "cuda_memory", "context"),
    (r"", "other", ""),  # a file no rule names: counted as not yet mapped
)

# Message words -> (subsystem or "" to keep the file's, cause, why).  First match wins; these
# are the messages with one clear reading.  'cuda' delegates to the CUDA catalog (the %s is
# cudaGetErrorString / cuGetErrorString text); 'errno' refines by the strerror text.
TEXT_RULES: tuple[tuple[str, str, str, str], ...] = (
    (r"^Failed to open lib|^Failed to load|dlopen|dlsym", "", "context", "an optional library is missing: NCCL falls back (a hint, not a failure)"),
    # misc/strongstream.cc ncclCudaGetCapturingGraph (v2.18.6-v2.30.7): a stream under CUDA graph capture
    # is refused when `CUDART_VERSION < 11030 || driver < 11030` -- NCCL's build or the driver predates
    # the capture API it needs (cudaStreamGetCaptureInfo_v2 / cudaStreamUpdateCaptureDependencies).
    # Two readings, the build first (weak: EITHER_OF_TWO below).
    (r"cannot be captured in a graph", "", "nccl_version_old", "NCCL refused a CUDA graph capture: it was built with a CUDA runtime older than 11.3, or the driver is older than R465 (misc/strongstream.cc: CUDART_VERSION < 11030 || driver < 11030)"),
    (r"^Cuda failure|^CUDA failure|^Cuda driver error|^CUDA driver error|cuGetErrorString|Cuda error|CUDA error", "cuda", "cuda", "a CUDA call failed: read its error text"),
    (r"shared memory segment|/dev/shm|shm_open|shmOpen|posix_fallocate|Call to .*fallocate|failed to extend .*bytes, error:", "shm", "errno", "shared-memory segment: read the errno text"),
    (r"^Error: failed to extend +to +bytes$", "shm", "shm_exhausted", "misc/shmutils.cc: posix_fallocate of the /dev/shm segment failed — on tmpfs that is ENOSPC, no room left"),
    # net_ib/common.cc ncclIbAsyncThreadMain (v2.30.7): 'async fatal event' for IBV_EVENT_DEVICE_FATAL,
    # CQ_ERR, QP_FATAL/REQ_ERR/ACCESS_ERR; 'Got non-fatal async event' (port active, LID/SM change ...) stays weak
    (r"Got async event|Got async error event|async fatal event", "ib", "nccl_network", "the HCA reported an async event (port or device error)"),
    # the same completion error in newer formats: 'with status=%d' (v2.21+), p2p.cc 'Got CQE with error'
    (r"Got completion .*with (?:error|status=)|completion with error|Got CQE with error", "ib", "nccl_network", "an IB work request completed with an error (peer, link or QP)"),
    (r"ibv_modify_qp|ibv_create_qp|QP .*state|Error on QP|rdma_connect", "ib", "nccl_network", "an IB queue pair could not be brought up"),
    (r"ibv_reg_mr|ibv_reg_dmabuf_mr|reg_mr|dmabuf", "ib", "errno", "IB memory registration failed: read the errno text"),
    (r"NCCL_SOCKET_IFNAME|NCCL_IB_HCA|NCCL_OOB_NET_IFNAME|no socket interface|No usable listening interface|neither AF_INET|interface found|verify NCCL_", "socket", "nccl_network", "no usable network interface for the settings given"),
    (r"NCCL_COMM_ID", "socket", "nccl_network", "bad NCCL_COMM_ID"),
    # misc/socket.cc socketProgressOpt: recv() returning 0 -> "Connection closed by remote peer",
    # ECONNRESET/EPIPE -> "Connection reset by peer" -- what every rank prints when a PEER PROCESS
    # dies, as much as when the network fails: weak (PEER_FALLOUT below).
    (r"Connection reset|Connection closed|closed by remote|remote process exited|peer.*closed", "socket", "nccl_network", "a peer closed or reset the connection (a crashed peer prints it as much as a network fault)"),
    # misc/socket.cc (2.18+) socketStartConnect/socketPollConnect: ECONNREFUSED (and ETIMEDOUT) are
    # retried RETRY_REFUSED_TIMES, then 'exceeded retries': nobody listened at the peer's address --
    # a peer process dead or not yet up, or a wrong port -- as much as a path fault: weak (audit 7 M2).
    (r"exceeded retries", "socket", "nccl_network", "connect attempts refused until NCCL's retries ran out: nobody listened at the peer's address (a peer dead or not yet up, a wrong port) as much as a path fault"),
    # misc/socket.cc socketFinalizeAccept (v2.16.5-v2.24.3): a connection whose first 8 bytes are not the
    # communicator's magic is closed and NCCL accepts again ("Ignore spurious connection and accept
    # again", return ncclSuccess): a stray client on NCCL's port (a scanner, an HTTP probe), no
    # failure of the job's own connections (2.27 prints it as INFO "didn't receive a valid magic").
    (r"socketFinalizeAccept: wrong magic", "", "context", "a stray connection to NCCL's listening port (not the communicator's magic), closed and ignored: NCCL accepts again"),
    (r"Connection refused|socketProgress|socketPoll|socketFinalizeAccept|socketConnect|Connect to .* failed|connect.* failed|Accept failed|accept failed|Net : Connection", "socket", "nccl_network", "a socket connection to a peer failed"),
    (r"NET/IB|NET/Socket|NET/Plugin|\bIB\b", "", "nccl_network", "an IB or socket transport failure"),
    (r"NVLS|nvls|[Mm]ulticast|cuMulticast|IMEX|[Ff]abric|MNNVL", "nvls", "nvls_fabric", "NVLS / multicast / fabric setup failed"),
    (r"P2P|p2p|peer access|cudaIpc|IPC handle|ipc", "", "nccl_p2p", "a peer-to-peer (CUDA IPC / NVLink / PCIe) path failed"),
    (r"version mismatch|Mismatched NCCL|different NCCL version|NCCL version", "", "nccl_version_mismatch", "ranks run different NCCL versions"),
    (r"Multiple Ranks are using the same GPU|Duplicate GPU detected|both on CUDA device|Invalid device \d*%d|[Ii]nvalid device count|exceeds ndev", "", "device_mapping", "ranks and GPUs do not map one to one (two ranks on one GPU, an ordinal beyond the visible GPUs)"),
    (r"Failed to CUDA (?:calloc|malloc)", "", "gpu_oom", "NCCL could not allocate device memory"),
    (r"Failed to CUDA host alloc|cudaHostAlloc|cuMemHostAlloc", "", "pinned_memory", "NCCL could not allocate pinned host memory"),
    (r"Detected mixed local (?:Coll)?Net device counts", "", "nccl_network", "nodes see different numbers of NICs (one down, or heterogeneous nodes)"),
    (r"Invalid config|[Ii]mproper usage|Attempt to use communicator before|not initialized via NCCL_CONFIG_INITIALIZER", "", "app_error", "the application configured or called NCCL wrongly"),
    (r"[Ii]nvalid (?:type|data ?type|datatype|operation|reduction|op|root|peer|rank|count|comm|communicator|pointer|device pointer|buffer|argument|usage|stream)|is not a valid|must be|cannot be NULL|is NULL|null pointer|out of range|not supported for|in-place|non-blocking|already|called with|mismatch in info", "", "app_error", "the application called NCCL wrongly"),
    (r"Failed to (?:CUDA )?[cm]alloc|Failed to allocate host|Failed to realloc|calloc.*failed|malloc.*failed", "", "context", "an allocation failed: the CUDA or errno text that follows says why"),
)

# Text rules that read the application's misuse only in the files that check the application's
# arguments and settings (the API entry points: argcheck, enqueue, collectives, group, init, the
# device API, the bootstrap's rank check-in).  Elsewhere the same words ("is NULL", "already",
# "must be", "out of range") are NCCL's checks of its own state or of the topology -- net_ib.cc
# "trying to connect already connected sendComm", proxy.cc "Storing response for already
# completed opId", graph/xml.cc "parent is NULL even after fallback", graph/tuning.cc "Invalid %s
# %d (must be a multiple of %d)" for a tuning value NCCL then ignores: no reading of their own
# (context; the result code or WARN that follows says what failed) (audit 7 M3).
API_FILES = r"^(enqueue|misc/argcheck|include/argcheck|collectives|group|init\.cc|dev_runtime|bootstrap)"
APPLICATION_WORDING = frozenset({
    r"[Ii]nvalid (?:type|data ?type|datatype|operation|reduction|op|root|peer|rank|count|comm|communicator|pointer|device pointer|buffer|argument|usage|stream)|is not a valid|must be|cannot be NULL|is NULL|null pointer|out of range|not supported for|in-place|non-blocking|already|called with|mismatch in info",
})

# Text rules whose words name only the subsystem (NCCL prefixes every message of its network
# transports with NET/IB or NET/Socket, benign notices as well as failures: "Failed to open mlx5dv
# symbols. Advance features ... will be disabled", "NCCL_SOCKET_NTHREADS is greater than the maximum
# allowed, setting to %d"): the reading is the subsystem's, weak, as FILE_RULES readings are.
NAMES_ONLY_THE_SUBSYSTEM = frozenset({r"NET/IB|NET/Socket|NET/Plugin|\bIB\b"})

# Text rules for what a rank prints when its PEER went away: the socket closed or reset under it.
# A dead peer process and a failed network print the same words, so the reading is weak: it
# leans to the network and needs a second, independent sign (audit 6, fixer2's check of
# misc/socket.cc socketProgressOpt).
# Text rules whose words name two versions that may be too old (NCCL's build, the driver): the
# reading names the first and is weak, since the line does not say which one.
EITHER_OF_TWO = frozenset({r"cannot be captured in a graph"})

PEER_FALLOUT = frozenset({r"Connection reset|Connection closed|closed by remote|remote process exited|peer.*closed",
                          r"exceeded retries"})

# NCCL <= 2.18 (net_ib.cc ncclIbAsyncThreadMain) printed EVERY HCA async event but COMM_EST in one
# format, "Got async event : %s" with libibverbs' ibv_event_type_str (libibverbs/verbs.c): only the
# fatal/error events say the network failed; "port active", "LID change", "GID table change" (RoCE
# address changes), "P_Key change", "SM change", "client reregistration" are routine (audit 6 M13).
ASYNC_EVENT_READINGS = {
    "formats": ["NET/IB : Got async event : %s", "NET/IB : %s:%d Got async event : %s"],
    "fatal": ["CQ error", "local work queue catastrophic error", "invalid request local work queue error",
              "local access violation work queue error", "path migration request error",
              "local catastrophic error", "port error", "SRQ catastrophic error", "WQ fatal"],
}

ERRNO_READINGS = {  # strerror text -> cause, for entries marked 'errno'
    "shm": {"No space left on device": "shm_exhausted", "Bus error": "shm_exhausted",
            "Cannot allocate memory": "shm_exhausted", "Permission denied": "shm_permissions",
            "Read-only file system": "shm_permissions", "Operation not permitted": "shm_permissions",
            "Too many open files": "fd_limit", "No such file or directory": "context"},
    # misc/socket.cc SYSCHECK(bind(...), "bind") -> "Call to bind failed: <strerror>": EADDRINUSE
    # only with a fixed port (NCCL_COMM_ID, a set NCCL_SOCKET_PORT range); unreachable peers on connect.
    # ETIMEDOUT on a TCP socket comes only from the kernel's own timers (Linux tcp_timer.c
    # tcp_write_timeout: SYN retries on connect, tcp_retries2 / TCP_USER_TIMEOUT on an established
    # connection, keepalive): nothing from the peer's address was acknowledged for that long -- a path
    # that stopped delivering (or a peer host that is gone), never a peer process that merely crashed
    # or hung (its kernel still answers). NCCL uses non-blocking sockets and poll(), no SO_RCVTIMEO
    # (whose expiry is EAGAIN). The same reading as gloo's ETIMEDOUT (messages.toml
    # gloo_established_socket_error, gloo_connect_unreachable). Real runs both ways:
    # fixtures/lab/stopped_vs_slow (a slow path keeps its ACKs coming and never reaches it).
    "socket": {"Address already in use": "port_in_use", "No route to host": "nccl_network",
               "Network is unreachable": "nccl_network", "Connection refused": "nccl_network",
               "Connection timed out": "nccl_network"},
    "ib": {"Cannot allocate memory": "memlock_limit", "Operation not permitted": "memlock_limit",
           "Bad address": "nccl_network", "No such device": "nccl_network", "Connection timed out": "nccl_network"},
}

# Readings above that are weak: the errno says nobody listened at the peer's address (an RST from a
# live host: the path works), which a peer process that died or has not started gives as much as a
# misrouted connection -- NCCL <= 2.17 'Connect to %s failed : Connection refused' after its refused
# retries (include/socket.h connectAddress, misc/socket.cc ncclSocketConnect) (audit 7 M2).
ERRNO_WEAK = {"socket": ["Connection refused"]}

# Readings above that do not hold when the line names a call the mechanism does not govern
# (regex on the line): ENOMEM reads as the memlock limit because ib_umem_get (Linux
# drivers/infiniband/core/umem.c) charges pinned pages to RLIMIT_MEMLOCK; ibv_reg_dmabuf_mr goes
# through umem_dmabuf.c ib_umem_dmabuf_get, which charges nothing (audit 5 H1).
ERRNO_NOT_WHEN = {
    "ib": {"Cannot allocate memory": r"\bibv_reg_dmabuf_mr\b"},
}

# A CUDA error NCCL's own call returns that can only mean NCCL's binary holds no kernel this GPU
# can run: the calls NCCL checks with CUDACHECK on a device-function handle (enqueue.cc
# ncclInitKernelsForDevice: cudaFuncGetAttributes / cudaFuncSetAttribute on every kernel of
# ncclDevKernelList at communicator init; cudaLaunchKernel; cudaGetFuncBySymbol) fail with these
# when the library was built without this GPU's architecture (NVCC_GENCODE) and carries no PTX
# the driver can JIT: "named symbol not found" under lazy module loading (CUDA 11.7+),
# "invalid device function" / "no kernel image is available" otherwise.  None of them is
# sticky (CUDA driver_types.h), so the call that printed it is the call that failed.
KERNEL_CALLS = re.compile(r"CUDACHECK\w*\(cuda(?:FuncGetAttributes|FuncSetAttribute|LaunchKernel\w*|GetFuncBySymbol)\(")
CUDA_READINGS = {
    "cudaErrorSymbolNotFound": "nccl_version_old",
    "cudaErrorInvalidDeviceFunction": "nccl_version_old",
    "cudaErrorNoKernelImageForDevice": "nccl_version_old",
}
CUDA_READINGS_WHY = ("NCCL's own kernels are not usable on this GPU: the NCCL build has no kernel image for its "
                     "architecture (an NCCL too old for the GPU, or built with NVCC_GENCODE that leaves it out)")


def kernel_call_files(repo: str, tag: str) -> list[str]:
    """The source files (relative to src/) that make CUDACHECKed calls on NCCL's own kernels:
    CUDA_READINGS applies to Cuda failure lines naming one of them (or naming no file)."""
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag, "--", "src").splitlines()
             if re.search(r"\.(cc|cu|h|cpp)$", f) and KERNEL_CALLS.search(git(repo, "show", f"{tag}:{f}"))]
    if not any(f.endswith("enqueue.cc") for f in files):
        raise SystemExit(f"{tag}: src/enqueue.cc makes no CUDACHECKed call on its kernels: re-check CUDA_READINGS")
    return [f[len("src/"):] for f in files]


FAILURE_INFO = re.compile(r"fail|error|abort|timed? ?out|unable|cannot|could not|mismatch|invalid", re.I)
CALL = re.compile(r"(?<![\w.>])(WARN|INFO)\s*\(")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def scan(repo: str, tag: str) -> list[tuple[str, str, str]]:
    """(level, src-relative path, format) for every WARN / failure INFO at one tag."""
    out = []
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag, "--", "src").splitlines()
             if re.search(r"\.(cc|cu|h|hpp|cpp|c)$", f)]
    for path in files:
        src = git(repo, "show", f"{tag}:{path}")
        if "WARN" not in src and "INFO" not in src:
            continue
        for m in CALL.finditer(src):
            level = m.group(1)
            start = m.end()
            if level == "INFO":  # INFO(FLAGS, fmt, ...): skip the flags argument
                depth, i = 0, start
                while i < len(src):
                    ch = src[i]
                    if ch in "([":
                        depth += 1
                    elif ch in ")]":
                        if depth == 0:
                            break
                        depth -= 1
                    elif ch == "," and depth == 0:
                        break
                    i += 1
                if i >= len(src) or src[i] != ",":
                    continue
                start = i + 1
            fmt, _ = first_string_arg(src, start)
            if fmt is None or (level == "INFO" and not FAILURE_INFO.search(fmt)):
                continue
            fmt = fmt.rstrip("\n")
            if not fmt.strip():
                continue
            out.append((level, path[len("src/"):], fmt))
    return out


def reading(path: str, fmt: str) -> dict:
    words = literal_text(fmt)
    sub, file_cause = next((s, c) for rx, s, c in FILE_RULES if re.search(rx, path))
    for rx, tsub, cause, why in TEXT_RULES:
        if re.search(rx, words) and rx in APPLICATION_WORDING and not re.search(API_FILES, path):
            return {"subsystem": sub, "cause": "context", "strength": "subsystem",
                    "why": "NCCL's check of its own state or of the topology (an argument check's words outside the API files)"}
        if re.search(rx, words):
            strength = "subsystem" if rx in NAMES_ONLY_THE_SUBSYSTEM | PEER_FALLOUT | EITHER_OF_TWO else "specific"
            return {"subsystem": tsub or sub, "cause": cause, "strength": strength, "why": why}
    if not file_cause:
        return {"subsystem": sub, "cause": "", "strength": "none", "why": f"source file {path}: no rule yet"}
    why = f"source file {path} ({sub} subsystem)"
    return {"subsystem": sub, "cause": file_cause, "strength": "subsystem", "why": why}


# ncclResult_t -> reading (the text ncclGetErrorString prints is read from src/init.cc).
RESULT_READINGS = {
    "ncclUnhandledCudaError": ("cuda", "a CUDA call failed inside NCCL: the Cuda failure WARN says which"),
    "ncclSystemError": ("errno", "a system call failed inside NCCL: the WARN before it names the call and errno"),
    "ncclInternalError": ("context", "an internal NCCL error: the WARN before it says where"),
    "ncclInvalidArgument": ("app_error", "the application passed an invalid argument to NCCL"),
    "ncclInvalidUsage": ("app_error", "the application used NCCL wrongly"),
    "ncclRemoteError": ("nccl_network", "a remote rank exited or the network failed"),
    "ncclInProgress": ("context", "a non-blocking operation is still in progress"),
    "ncclTimeout": ("context", "a NCCL operation timed out"),
}


def results(repo: str, tag: str) -> list[dict]:
    header = git(repo, "show", f"{tag}:src/nccl.h.in")
    enum = re.search(r"typedef enum \{(.*?)\} ncclResult_t;", header, re.S).group(1)
    src = git(repo, "show", f"{tag}:src/init.cc")
    texts = dict(re.findall(r"case (nccl\w+)\s*:\s*return \"([^\"]*)\"", src))
    out = []
    for name, number in re.findall(r"(nccl\w+)\s*=\s*(\d+)", enum):
        if name in ("ncclSuccess", "ncclNumResults"):
            continue
        cause, why = RESULT_READINGS.get(name, ("context", "no reading"))
        out.append({"id": f"ncclresult.{name}", "name": name, "number": int(number), "message": texts.get(name, ""),
                    "cause": cause, "why": why})
    return out


# The API functions nccl.h declares (src/nccl.h.in, in every release tag from v2.3.5-5 on).
_API_DECL = re.compile(r"^\s*(?:ncclResult_t|const\s+char\s*\*|void|int)\s+(nccl[A-Z]\w*)\s*\(", re.M)


def release_tags(repo: str) -> list[str]:
    tags = [t for t in git(repo, "tag").split() if re.fullmatch(r"v2\.\d+\.\d+-\d+", t)]
    return sorted(tags, key=lambda t: tuple(int(x) for x in re.findall(r"\d+", t)))


def api_since(repo: str) -> dict:
    """Per public API function: the first release tag whose nccl.h declares it.  A process
    that fails to resolve one of these ("undefined symbol: ncclCommRegister") loaded a
    libnccl older than that release.  Functions declared in the oldest tag scanned (every
    NCCL has them) and functions a later tag dropped are left out: no reading for them."""
    tags = release_tags(repo)
    first: dict[str, str] = {}
    present: dict[str, set[str]] = {}
    for tag in tags:
        header = git(repo, "show", f"{tag}:src/nccl.h.in")
        for name in set(_API_DECL.findall(header)):
            first.setdefault(name, tag)
            present.setdefault(name, set()).add(tag)
    newest = tags[-1]
    since = {name: re.sub(r"^v|-\d+$", "", tag) for name, tag in first.items()
             if tag != tags[0] and newest in present[name]}
    return {"tags": [tags[0], newest], "tag_count": len(tags), "header": "src/nccl.h.in",
            "since": dict(sorted(since.items()))}


def main(argv: list[str]) -> int:
    repo = argv[1] if len(argv) > 1 else "."
    commits = {t: git(repo, "rev-parse", f"{t}^{{commit}}").strip() for t in TAGS}
    entries: dict[str, dict] = {}
    per_version: dict[str, list[str]] = {}
    kernel_files: set[str] = set()
    for tag in TAGS:
        kernel_files.update(kernel_call_files(repo, tag))
        ids = []
        for level, path, fmt in scan(repo, tag):
            eid = "nccl." + hashlib.sha1(f"{level}\0{fmt}".encode()).hexdigest()[:10]
            e = entries.get(eid)
            if e is None:
                e = entries[eid] = {"id": eid, "level": level, "format": fmt, "regex": printf_to_regex(fmt),
                                    "key": longest_literal(fmt), "files": [], "versions": [], **reading(path, fmt)}
            if path not in e["files"]:
                e["files"].append(path)
            if tag not in e["versions"]:
                e["versions"].append(tag)
            ids.append(eid)
        per_version[tag] = sorted(set(ids))
    for e in entries.values():
        if not e["key"] or len(e["key"]) < 4:  # a format that is all conversions: matches anything
            e.update(cause="context", strength="unmatchable", why="no fixed words to recognise it by")
    out = {
        "catalog": "nccl", "upstream": "https://github.com/NVIDIA/nccl", "version": NEWEST,
        "commits": commits, "generator": "tools/catalogs/gen_nccl.py",
        "file_rules": [{"path": rx, "subsystem": s, "cause": c} for rx, s, c in FILE_RULES],
        "errno_readings": ERRNO_READINGS,
        "errno_not_when": ERRNO_NOT_WHEN,
        "errno_weak": ERRNO_WEAK,
        "async_event_readings": ASYNC_EVENT_READINGS,
        "cuda_readings": {"readings": CUDA_READINGS, "files": sorted(kernel_files), "why": CUDA_READINGS_WHY},
        "versions": {t: len(v) for t, v in per_version.items()},
        "results": results(repo, NEWEST),
        "api": api_since(repo),
        "entries": sorted(entries.values(), key=lambda e: (e["files"][0], e["format"])),
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
