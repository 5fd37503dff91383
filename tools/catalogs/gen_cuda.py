"""Generate postmortem/knowledge/catalogs/cuda.json: every cudaError_t and CUresult with its
number, the message text CUDA prints for it, the header's description, and its reading.

Upstream: the local CUDA toolkit (13.0, V13.0.88): include/driver_types.h (enum cudaError),
include/cuda.h (enum cudaError_enum = CUresult), and lib/libcudart.so.13, whose
cudaGetErrorName/cudaGetErrorString give every runtime name and message exactly (no GPU
needed).  The driver's cuGetErrorString needs libcuda (not installed here): a CUresult
carries the runtime message of the same number (the runtime maps driver errors onto those
numbers) and says so in `message_from`.

Re-run:  python tools/catalogs/gen_cuda.py /usr/local/cuda > postmortem/knowledge/catalogs/cuda.json
"""
from __future__ import annotations

import ctypes
import json
import re
import sys
from pathlib import Path

# Reading by error number (cudaError_t and CUresult share the numbering):
# (cause, strength, why).  cause 'context' = says what failed but not why.
READINGS: dict[int, tuple[str, str, str]] = {
    2: ("gpu_oom", "specific", "a CUDA allocation ran out of device memory"),
    34: ("cuda_driver_mismatch", "specific", "the CUDA driver stub library was loaded: no real driver in the container"),
    35: ("cuda_driver_mismatch", "specific", "the driver is older than the CUDA runtime"),
    36: ("cuda_driver_mismatch", "specific", "the call needs a newer driver"),
    46: ("device_mapping", "specific", "the GPU is busy or unavailable (exclusive-process mode, another process holds it)"),
    100: ("device_mapping", "specific", "no GPU visible to the process (CUDA_VISIBLE_DEVICES, container device mapping)"),
    101: ("device_mapping", "specific", "a device ordinal beyond the visible GPUs (LOCAL_RANK vs CUDA_VISIBLE_DEVICES)"),
    216: ("device_mapping", "specific", "the context is already in use by another thread/process (device shared)"),
    214: ("gpu_memory_ecc", "specific", "an uncorrectable ECC error was detected"),
    220: ("nvlink_fault", "specific", "an uncorrectable NVLink error was detected"),
    226: ("gpu_hardware_other", "subsystem", "an error during kernel execution was contained (e.g. memory error); other work may continue"),
    802: ("nvls_fabric", "specific", "system not ready: on NVSwitch systems the Fabric Manager is not running"),
    # the header: "a mismatch between the versions of the display driver and the CUDA driver" -- the
    # kernel module against the libcuda the process loaded (a container bringing its own), which is
    # causes.toml driver_library_mismatch, not a driver older than the runtime (35)
    803: ("driver_library_mismatch", "specific", "the kernel driver and the user-mode driver (libcuda) versions differ"),
    804: ("cuda_driver_mismatch", "specific", "forward compatibility is not supported on this GPU"),
    222: ("cuda_driver_mismatch", "specific", "the PTX was built by a newer toolchain than the driver supports"),
    209: ("cuda_driver_mismatch", "specific", "the binary has no kernel for this GPU's architecture (build targets vs GPU): the build, not the job's code"),
    98: ("cuda_driver_mismatch", "subsystem", "no kernel image for this GPU (build targets vs GPU)"),
    200: ("cuda_driver_mismatch", "subsystem", "the kernel image is invalid for this device"),
    218: ("cuda_driver_mismatch", "subsystem", "the PTX could not be compiled for this device"),
    # Weak, as messages.toml cuda_illegal_access reads the same text (audit 6 M10: one text, one
    # strength, whoever prints it -- "CUDA error:", THCudaCheck, a CUDA-check macro, an exception):
    # a kernel's bad pointer or a failing GPU / driver both raise it
    700: ("app_error", "subsystem", "an illegal memory access in a kernel: the job's own code unless the same GPU repeats or an Xid says hardware"),
    710: ("app_error", "specific", "a device-side assert in the job's kernels (an index out of range, a bad label)"),
    # Weak, for 715's reason (audit 7 M7): a corrupted call stack or an invalid program counter is
    # what corrupt code/stack memory or a jump through a corrupt pointer gives -- a library kernel's
    # bug or a failing GPU as much as the job's code
    714: ("app_error", "subsystem", "a kernel's call stack overflowed or was corrupted: a kernel's own bug or a failing GPU (corrupt stack memory)"),
    # Weak: nothing in a compiled kernel is an illegal instruction; the GPU meets one when code memory
    # or a jump target is corrupt -- a library kernel's bug or a failing GPU alike (messages.toml
    # cuda_illegal_access already reads the same text as a weak sign)
    715: ("app_error", "subsystem", "an illegal instruction in a kernel: a kernel's own bug or a failing GPU (corrupt code memory)"),
    716: ("app_error", "subsystem", "a misaligned memory access in a kernel"),  # weak: as 700 (cuda_illegal_access)
    717: ("app_error", "specific", "a kernel used an address in the wrong address space"),
    718: ("app_error", "subsystem", "a kernel jumped to an invalid program counter: a kernel's own bug or a failing GPU (a corrupt jump target)"),
    719: ("app_error", "subsystem", "a kernel failed (unspecified): the job's code unless an Xid or repeats on one GPU say hardware"),
    701: ("app_error", "specific", "the kernel launch asked for more resources than the GPU has"),
    720: ("app_error", "specific", "a cooperative launch larger than the GPU can run"),
    221: ("context", "subsystem", "no JIT compiler available"),
    223: ("context", "subsystem", "JIT compilation disabled"),
    999: ("context", "subsystem", "unknown error: alone it says nothing; with an Xid or a fabric error it is their fallout"),
    3: ("context", "subsystem", "CUDA could not initialise: read the driver, fabric and container messages around it"),
    4: ("context", "subsystem", "the runtime is unloading (process exit): fallout"),
    709: ("context", "subsystem", "the context was destroyed: fallout of an earlier error"),
    53: ("context", "subsystem", "a previous launch failed: fallout"),
    702: ("context", "subsystem", "a kernel ran past the display watchdog"),
    304: ("context", "subsystem", "an OS call inside CUDA failed"),
    909: ("context", "subsystem", "a CUDA wait timed out"),
    911: ("context", "subsystem", "an external device reported an error"),
}
# Texts older runtimes printed for a number whose 13.0 text differs (cudaGetErrorString of
# CUDA <= 10.x), each from a real public log: (number, text, where it was seen).
OLDER_TEXTS: tuple[tuple[int, str, str], ...] = (
    (46, "all CUDA-capable devices are busy or unavailable",
     "pytorch/pytorch issue logs; fixtures/validation5/exclusive-mode-busy-machin-07"),
)

APP_MISUSE = re.compile(r"Invalid|Missing|Mixed|NotYetImplemented|AlreadyMapped|NotMapped|AlreadyAcquired|Duplicate|"
                        r"AddressOfConstant|TextureNotBound|StreamCapture|CapturedEvent|Graph|Peer|HostMemory|"
                        r"TooMany|Unsupported|NotReady|SetOnActiveProcess|PrimaryContext|ContextAlreadyCurrent|"
                        r"IllegalState|Lossy|SymbolNotFound|NotFound|FileNotFound|SharedObject|ArrayIsMapped|"
                        r"MapBuffer|UnmapBuffer|MemoryValueTooLarge|Launch(?:MaxDepth|FileScoped|Pending|Incompatible)|"
                        r"SyncDepth|Cdp|FunctionNotLoaded|TensorMemoryLeak|Configuration|Pitch|Symbol|Filter|Norm|"
                        r"Channel|Memcpy|Surface|Texture|Synchronization|Deinitialized|NotInitialized|Uninitialized|"
                        r"InvalidContext|ExecAffinity|DevSideSync|KeyRotation|ClusterSize|Resource", re.I)


def _camel(name: str) -> str:
    """CUDA_ERROR_OUT_OF_MEMORY -> OutOfMemory (to share APP_MISUSE with runtime names)."""
    return "".join(w.capitalize() for w in name.removeprefix("CUDA_ERROR_").split("_"))


def reading(number: int, name: str) -> dict:
    if number in READINGS:
        cause, strength, why = READINGS[number]
    elif number in (5, 6, 7, 8):
        cause, strength, why = "context", "subsystem", "profiler state: harmless"
    elif 805 <= number <= 810:
        cause, strength, why = "context", "subsystem", "the MPS server or client failed"
    elif number in (102, 103, 127, 800, 801, 812, 811):
        cause, strength, why = "context", "subsystem", "the platform does not allow or support this"
    elif APP_MISUSE.search(name if name.startswith("cuda") else _camel(name)) or number in (1, 400, 401, 500, 600):
        cause, strength, why = "app_error", "subsystem", "the call was used wrongly (an API misuse by the job or a library it loads)"
    else:
        cause, strength, why = "context", "subsystem", "no reading: says what failed, not why"
    return {"cause": cause, "strength": strength, "why": why}


def enum_members(header: str, enum_pattern: str) -> list[tuple[str, int, str]]:
    """(name, number, doc comment) of an enum's members, in order."""
    body = re.search(enum_pattern + r"\s*\{(.*?)\}", header, re.S).group(1)
    out = []
    for m in re.finditer(r"((?:/\*\*.*?\*/\s*)?)(\w+)\s*=\s*(\d+)", body, re.S):
        doc = re.sub(r"\s*\n\s*\*\s?", " ", m.group(1)).strip("/* \n")
        doc = re.sub(r"\s+", " ", doc.replace("::", ""))
        out.append((m.group(2), int(m.group(3)), doc))
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "/usr/local/cuda")
    lib = next(p for p in sorted((root / "lib").glob("libcudart.so*")) + sorted((root / "lib64").glob("libcudart.so*"))
               if p.is_file())
    cudart = ctypes.CDLL(str(lib))
    cudart.cudaGetErrorString.restype = ctypes.c_char_p
    cudart.cudaGetErrorName.restype = ctypes.c_char_p
    version = ctypes.c_int()
    cudart.cudaRuntimeGetVersion(ctypes.byref(version))
    runtime_text = {}
    entries = []
    rt = enum_members((root / "include/driver_types.h").read_text(), r"enum\s+__device_builtin__\s+cudaError")
    for name, number, doc in rt:
        assert cudart.cudaGetErrorName(number).decode() == name, name
        text = cudart.cudaGetErrorString(number).decode()
        runtime_text[number] = text
        older = [t for n, t, _ in OLDER_TEXTS if n == number]
        entries.append({"id": f"cuda.{name}", "api": "runtime", "name": name, "number": number, "message": text,
                        "message_from": f"cudaGetErrorString({number})", "older_messages": older, "doc": doc,
                        **reading(number, name)})
    for name, number, doc in enum_members((root / "include/cuda.h").read_text(), r"typedef\s+enum\s+cudaError_enum"):
        text = runtime_text.get(number, "")
        entries.append({"id": f"cu.{name}", "api": "driver", "name": name, "number": number, "message": text,
                        "message_from": f"cudaGetErrorString({number}) (same number)" if text else "",
                        "doc": doc, **reading(number, name)})
    entries = [e for e in entries if e["number"] != 0]  # success is not an error
    v = version.value
    out = {"catalog": "cuda", "upstream": f"CUDA toolkit {v // 1000}.{v % 1000 // 10} ({lib.name}, driver_types.h, cuda.h)",
           "version": f"{v // 1000}.{v % 1000 // 10}", "generator": "tools/catalogs/gen_cuda.py", "entries": entries}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
