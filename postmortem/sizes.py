"""Sizes in bytes: as tools print them, as a user types them, and as we print them.

* `parse_printed_size`: what df, free and mount options print, powers of 1024 (K, M, G,
  Ki, Mi, Gi; `k`/`m`/`g` in mount options; a bare number times the table's block size);
  None when the text is not one (a report's cell may hold anything).
* `parse_size_argument`: what a user gives `postmortem check` (`--shm-size 8G`): single
  letters and *iB are binary (as docker --shm-size and df -h read them), KB/MB/GB/TB are
  decimal; ValueError with a message when the text is not one.
* `format_size`: bytes for a person (`1.50 GiB`).
"""
from __future__ import annotations

import math
import re

UNITS: dict[str, int] = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4,
                         "P": 1024**5, "E": 1024**6, "Z": 1024**7, "Y": 1024**8}
_PRINTED = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPEZYkmgtpe]?)(?:i?B?)$")

ARGUMENT_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
}
_ARGUMENT = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_printed_size(text: str, scale: int = 1) -> int | None:
    """`64M` -> 67108864, `1.5G`, `23Gi`, `0B`, `65536k`; a bare number is multiplied by `scale`."""
    m = _PRINTED.match(text.strip())
    if not m:
        return None
    number = float(m.group(1).replace(",", "."))
    unit = m.group(2).upper()
    size = number * (UNITS[unit] if unit else scale)
    # A size no machine has (a mangled or hostile figure) is no size: 2**63 bytes is 8 EiB.
    return round(size) if math.isfinite(size) and size < 2**63 else None


def parse_size_argument(text: str) -> int:
    """`512M`, `1.5G`, `1GiB`, `2GB`, `1048576` -> bytes.  Raises ValueError on anything else."""
    match = _ARGUMENT.match(text)
    unit = match.group("unit").lower() if match else None
    if match is None or unit not in ARGUMENT_UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M, 1.5G, 1GiB or plain bytes)")
    return int(float(match.group("n")) * ARGUMENT_UNITS[unit])


def format_size(n: float) -> str:
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= factor:
            return f"{n / factor:.2f} {unit}"
    return f"{int(n)} B"
