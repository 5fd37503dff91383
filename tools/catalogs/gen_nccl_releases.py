"""Generate postmortem/knowledge/catalogs/nccl_releases.json: NCCL's release history -- every
release and the fixes it lists, each fix with the identifiers it names.

Upstream: https://github.com/NVIDIA/nccl, a bare mirror at commit PINNED (master).  Two
sources, both NCCL's own words:
  - the release commits ("NCCL 2.x.y-1" / "2.x.y-1"): their message is the release notes,
    one item a line at column 0, sub-items " * ", continuation lines indented;
  - the non-merge commits whose subject says it fixes something and which change src/: the
    release they first shipped in is the oldest release tag containing them (git tag --contains).  Releases from 2.30 on carry empty release commits; these commits are then
    the only notes.

A fix item's identifiers are extracted by one general rule (IDENTIFIERS below), never chosen
per case: NCCL_* variables, nccl* API and function names, source file names, GitHub issue
numbers, quoted texts, and the component words NCCL's own source tree and WARN lines use
(COMPONENTS: RAS, proxy, NVLS, CollNet, PXN, IB, shm, p2p, cuMem, topology, ...).

Re-run (needs a clone or bare mirror of NVIDIA/nccl with its tags):
    python tools/catalogs/gen_nccl_releases.py /path/to/nccl.git > postmortem/knowledge/catalogs/nccl_releases.json
"""
from __future__ import annotations

import json
import re
import subprocess
import textwrap
import sys

PINNED = "5067397c2676d5aed50042fc39e5c8ee96eb0027"

RELEASE_SUBJECT = re.compile(r"^(?:NCCL )?(2\.\d+\.\d+)-\d+$")   # pre-releases (2.30.6a5-1) are not releases
RELEASE_TAG = re.compile(r"^v(2\.\d+\.\d+)-\d+$")
# A fix item: NCCL's notes say "Fix ...", "fixes", "Avoid a crash", "Prevent a hang", "Work around".
FIX_WORDS = re.compile(r"\b(?:fix(?:es|ed|ing)?|bug|crash(?:es|ed)?|hang(?:s)?|deadlock|regression|avoid|prevent|work ?around|"
                       r"corrupt(?:ion|ed)?|leak|race|segfault|overflow|incorrect|wrong|fail(?:s|ed|ure|ing)?)\b", re.I)

# A commit fixing the build, the compiler's warnings or the docs fixes no failure at run time.
NOT_RUNTIME = re.compile(r"(?i)\b(?:warnings?|build|compil\w*|typo|docs?|documentation|makefile|lint|format(?:ting)?|revert)\b")
# ncclResult_t names: what every failure returns, not what a fix is about.
RESULT_NAMES = re.compile(r"^p?nccl(?:Success|InProgress|\w*Error|Invalid\w*)$")

# Component words: the subsystems of NCCL's src/ tree (transport/, graph/, ras/, proxy.cc ...)
# as its notes and WARN lines name them.  id -> regex on the text.  The same table reads a
# failure's lines (knowledge/catalog.py nccl_fix_identifiers), so both sides speak one vocabulary.
COMPONENTS: dict[str, str] = {
    "ras": r"\bRAS\b",
    "proxy": r"\bproxy\b",
    "nvls": r"\bNVLS\b|NVLink ?SHARP|\bnvls\b",
    "collnet": r"\bcoll_?net\b",
    "pxn": r"\bPXN\b",
    "ib": r"\bIB\b|net[/_]ib\b|\bInfiniBand\b|\bRoCE\b|\bverbs\b|\bibv_?\w*",
    "shm": r"\bshm\b|\bshared memory\b|/dev/shm",
    "p2p": r"\bP2P\b|\bp2p\b|\bIPC\b",
    "cumem": r"\bcuMem\w*|\bCUMEM\b|\bVMM\b",
    "topology": r"\btopology\b|\btopo\b|\bgraph/|\bXML\b|\bpaths?\.cc\b|\bsearch\.cc\b",
    "socket": r"\bsocket\b|\bbootstrap\b",
    "nvml": r"\bNVML\b",
    "gdr": r"\bGDR\b|\bGPU ?Direct ?RDMA\b|\bgdrcopy\b|\bdmabuf\b|\bDMA-BUF\b",
    "cuda_graph": r"\bCUDA graphs?\b|\bgraph capture\b|\bcaptur(?:e|ed|ing)\b",
    "plugin": r"\bplugin\b",
    "tuner": r"\btuner\b",
    "profiler": r"\bprofiler\b",
    "nvlink": r"\bNVLink\b",
    "tree": r"\b[Tt]ree\b",
    "ring": r"\b[Rr]ing\b",
    "ll128": r"\bLL128\b",
    "sharp": r"\bSHARP\b",
    "mnnvl": r"\bMNNVL\b|\bmulti-node NVLink\b",
    "alltoall": r"\ball ?to ?all\b",
    "abort": r"\bncclCommAbort\b|\babort\b",
    "nonblocking": r"\bnon-?blocking\b",
    "registration": r"\bregistration\b|\bregister(?:ed)?\b",
    "symmetric": r"\bsymmetric\b",
    "windows": r"\bWindows\b",
    "wsl": r"\bWSL\b",
    "ncclx": r"\bncclx\b",
}

# Acronyms whose lower-case spelling is another word; every other component matches in any case.
CASED = frozenset({"ras", "pxn", "ib", "gdr", "nvml", "sharp", "mnnvl", "wsl", "ll128"})

IDENTIFIERS: dict[str, str] = {
    "env": r"\bNCCL_[A-Z0-9_]{2,}\b",
    "api": r"\bp?nccl[A-Z]\w{2,}\b",
    "file": r"\b[\w/]+\.(?:cc|cu|cpp|h)\b",
    "issue": r"(?:[Ii]ssue|PR|#)\s?#?(\d{2,5})\b",
    "quoted": r"\"([^\"\n]{4,80})\"|'([^'\n]{4,80})'",
}


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def identifiers(text: str) -> dict[str, list[str]]:
    """The identifiers one fix names, by kind (the general rule of this catalog)."""
    out: dict[str, list[str]] = {}
    for kind, rx in IDENTIFIERS.items():
        found = []
        for m in re.finditer(rx, text):
            g = next((x for x in m.groups() if x), None) if m.groups() else None
            value = g or m.group(0)
            if kind == "file":
                value = value.rsplit("/", 1)[-1]
            if kind == "api" and RESULT_NAMES.match(value):
                continue
            if value not in found:
                found.append(value)
        if found:
            out[kind] = found
    comps = [c for c, rx in COMPONENTS.items() if re.search(rx, text, 0 if c in CASED else re.I)]
    if comps:
        out["component"] = comps
    return out


def note_items(body: str) -> list[str]:
    """A release commit's notes as items: a line at column 0 starts one, a ' * ' line starts a
    sub-item (prefixed with its parent's first line), indented lines continue the last."""
    items: list[str] = []
    parent = ""
    for line in textwrap.dedent(body).splitlines():
        if not line.strip() or line.startswith(("Signed-off-by", "Mirrored-from", "Co-authored-by")):
            continue
        if re.match(r"^\s*\*\s", line):
            items.append(f"{parent} -- {line.strip()[2:].strip()}" if parent else line.strip()[2:].strip())
        elif items and (line[:1].isspace() or line[:1].islower()):  # wrapped text continues the item
            items[-1] += " " + line.strip()
        else:
            parent = line.strip()
            items.append(parent)
    return items


def is_fix(item: str) -> bool:
    """A notes item about a fault: "Fix ...", or fault words in an item that does not announce
    a feature ("Add magic number ... to detect comm corruption" is a feature)."""
    if NOT_RUNTIME.search(item):
        return False
    if re.match(r"(?i)fix", item):
        return True
    return bool(FIX_WORDS.search(item)) and not re.match(r"(?i)(add|improve|optimi|enable|support|introduce|reduce|increase|allow|extend)\b", item)


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def main(argv: list[str]) -> int:
    repo = argv[1]
    releases: dict[str, dict] = {}
    for line in git(repo, "log", "--no-merges", "--format=%H%x09%s", PINNED).splitlines():
        commit, subject = line.split("\t", 1)
        m = RELEASE_SUBJECT.match(subject.strip())
        if not m or m.group(1) in releases:
            continue
        body = git(repo, "show", "-s", "--format=%b", commit)
        fixes = [{"text": t, "source": "release notes", "ids": identifiers(t)}
                 for t in note_items(body) if is_fix(t)]
        releases[m.group(1)] = {"version": m.group(1), "commit": commit, "fixes": fixes}
    # Fix commits between releases: the oldest release tag containing them is where they shipped.
    for line in git(repo, "log", "--no-merges", "--format=%H%x09%s", PINNED, "--", "src").splitlines():
        commit, subject = line.split("\t", 1)
        if RELEASE_SUBJECT.match(subject.strip()) or not re.search(r"\bfix", subject, re.I) or NOT_RUNTIME.search(subject):
            continue
        # The oldest release tag that contains it (a fix merged into a maintenance branch ships
        # there first: 2.18.6 before 2.19.1).
        shipped = sorted((m.group(1) for t in git(repo, "tag", "--contains", commit).split()
                          for m in [RELEASE_TAG.match(t)] if m and m.group(1) in releases), key=vkey)
        if not shipped:
            continue  # not in any release yet
        body = git(repo, "show", "-s", "--format=%b", commit).split("\n\n")[0]
        text = re.sub(r"^Squash commit for\s+", "", subject.strip())
        full = f"{text} {' '.join(body.split())}".strip()
        releases[shipped[0]]["fixes"].append({"text": text, "source": f"commit {commit[:12]}", "ids": identifiers(full)})
    ordered = sorted(releases.values(), key=lambda r: vkey(r["version"]))
    json.dump({"catalog": "nccl_releases", "upstream": "https://github.com/NVIDIA/nccl", "pinned": PINNED,
               "generator": "tools/catalogs/gen_nccl_releases.py", "components": COMPONENTS,
               "cased": sorted(CASED), "identifiers": IDENTIFIERS,
               "releases": ordered}, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
