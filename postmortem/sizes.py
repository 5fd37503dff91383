"""Sizes as tools print them: `64M`, `1.5G`, `23Gi`, `0B`, `65536k` -> bytes.

df, free and mount options print powers of 1024 (K, M, G, Ki, Mi, Gi; `k`/`m`/`g` in
mount options); /proc/meminfo's `kB` is KiB.
"""
from __future__ import annotations

import math
import re

UNITS: dict[str, int] = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4,
                         "P": 1024**5, "E": 1024**6, "Z": 1024**7, "Y": 1024**8}
_SIZE = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPEZYkmgtpe]?)(?:i?B?)$")


def parse_size(text: str, scale: int = 1) -> int | None:
    """`64M` -> 67108864, `1.5G`, `23Gi`, `0B`, `65536k`; a bare number is multiplied by `scale`."""
    m = _SIZE.match(text.strip())
    if not m:
        return None
    number = float(m.group(1).replace(",", "."))
    unit = m.group(2).upper()
    size = number * (UNITS[unit] if unit else scale)
    # A size no machine has (a mangled or hostile figure) is no size: 2**63 bytes is 8 EiB.
    return round(size) if math.isfinite(size) and size < 2**63 else None
