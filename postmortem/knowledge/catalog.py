"""The catalogs generated from the upstream sources (knowledge/catalogs/*.json, made by
tools/catalogs/gen_*.py): every NCCL WARN format, cudaError_t/CUresult, Xid, SXid, NV_STATUS
code, and the PyTorch and kernel messages that explain a dead training job.

Loaded lazily (nothing is read or compiled at import); a regex is compiled the first time
its entry is a candidate for a line.  Every generated regex is linear-time: bounded classes,
no nested quantifier (tests/test_catalogs.py checks each one).

Lookups: match_nccl(line), cuda_error(name | number | message), cuda_errors_in(line),
xid(code), sxid(code), nv_status(name), nv_status_in(line), match_message(line),
coverage().
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from postmortem.packaged import packaged

CONTEXT = "context"     # the entry says what failed, not why
CUDA = "cuda"           # read the CUDA error text the line carries
ERRNO = "errno"         # read the strerror text the line carries


@dataclass(frozen=True, slots=True)
class Entry:
    """One catalog entry: a message (with its regex) or a numbered code."""
    catalog: str
    id: str
    name: str            # a code's name, or a message's fixed words
    cause: str           # a cause id, 'context', 'cuda', 'errno', or '' (not yet mapped)
    strength: str        # 'specific' (one clear reading) | 'subsystem' (a whole class) | 'none' | 'unmatchable'
    why: str
    number: int | None = None
    message: str = ""    # the text the code prints (CUDA, NV_STATUS, ncclResult_t)
    regex: str = ""      # for messages
    key: str = ""        # the longest fixed piece: a cheap prefilter
    subsystem: str = ""
    files: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    level: str = ""      # NCCL: WARN | INFO


@dataclass(frozen=True, slots=True)
class Match:
    """A catalog entry found on a line, with the cause it reads as on that line (errno,
    CUDA text, signal or oops module refine a class-level entry)."""
    entry: Entry
    cause: str           # a cause id or 'context'
    strength: str        # 'specific' | 'subsystem'
    detail: str = ""     # what refined it (an errno text, a CUDA error name, a module)


@dataclass(frozen=True, slots=True)
class CoverageRow:
    catalog: str
    version: str
    total: int
    mapped: int
    context: int
    unmapped: int


def _read(name: str) -> dict:
    text = packaged("postmortem.knowledge", "catalogs", name).read_text(encoding="utf-8")
    return json.loads(text)


def _printed_line(regex: str) -> str:
    """A format holding a newline (nvls.cc: "...CUDA error %d '%s'.\\nThis is usually caused by
    ...") prints further physical lines, and a log line holds only the first: the generated
    regex up to its first escaped newline."""
    return regex.partition("\\\n")[0]


def _without_full_stop(key: str) -> str:
    """An entry's key (the fixed words a line must hold before its regex is tried) without a closing
    full stop: the regex reads a line quoted without it (_cut_regex), so the key must let it through."""
    return key[:-1] if key[-1:] in (".", "!") and key[-2:-1].isalnum() else key


def _entry(catalog: str, e: dict) -> Entry:
    return Entry(catalog=catalog, id=e["id"], name=e.get("name") or e.get("format") or e.get("template", ""),
                 cause=e.get("cause", ""), strength=e.get("strength", "specific"), why=e.get("why", ""),
                 number=e.get("number", e.get("code")), message=e.get("message", ""), regex=_printed_line(e.get("regex", "")),
                 key=_without_full_stop(e.get("key", "")), subsystem=e.get("subsystem", e.get("family", "")),
                 files=tuple(e.get("files", [e["file"]] if "file" in e else [])), versions=tuple(e.get("versions", [])),
                 level=e.get("level", ""))


@functools.lru_cache(maxsize=None)
def _catalog(name: str) -> tuple[dict, tuple[Entry, ...]]:
    data = _read(f"{name}.json")
    return data, tuple(_entry(name, e) for e in data["entries"])


def data(name: str) -> dict:
    """A catalog's whole file as read (cached with its entries): for a table the Entry view does
    not carry (nccl results, pytorch retried_entries, cuda older_messages)."""
    return _catalog(name)[0]


@functools.lru_cache(maxsize=None)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# The run of literal words a template ends with, as the generators escape them ("\ before\ timing\ out\.").
_LITERAL_TAIL = re.compile(r"(?:\\[ .,:;!()\[\]'\"-]|\w)+$")


@functools.lru_cache(maxsize=None)
def _cut_regex(pattern: str) -> re.Pattern[str] | None:
    """The entry's regex for a line that ends early, inside the template's closing words: people
    quote logs with the tail cut ("... ran for 645901 milliseconds"). All but the first closing word
    become optional, whole words only, and the line must end there, so a different continuation never matches."""
    tail = _LITERAL_TAIL.search(pattern)
    if not tail or tail.start() == 0:
        return None
    words = [w for w in re.split(r"(?=\\ )", tail.group()) if w]
    if len(words) < 2:
        return None
    # ... the closing full stop too: a paste or a wrapper quoting the message drops it
    last = words[-1]
    if re.search(r"\w\\[.!]$", last):
        words[-1] = f"{last[:-2]}(?:{last[-2:]})?"
    optional = ""
    for piece in reversed(words[1:]):
        optional = f"(?:{piece}{optional})?"
    # The first closing word stays required: a cut line still shows where the template went on.
    return re.compile(pattern[:tail.start()] + words[0] + optional + r"\s*$")


# --- NCCL ---------------------------------------------------------------------------------

# "host:pid:tid [dev] transport/net_ib.cc:93 NCCL WARN text" (file:line since NCCL 2.x, an
# optional "(func)" on some builds).
_NCCL_LINE = re.compile(r"(?:(?P<file>[\w./-]{1,120}\.(?:cc|cu|h|cpp|c)):\d{1,6} (?:\(\w{1,80}\) )?)?NCCL (?P<level>WARN|INFO) ?")
_PREFIX = 8  # entries indexed by the first characters of their fixed prefix


@functools.lru_cache(maxsize=None)
def _nccl_index() -> tuple[dict[tuple[str, str], tuple[Entry, ...]], dict[str, tuple[Entry, ...]], list, dict]:
    data, entries = _catalog("nccl")
    by_prefix: dict[tuple[str, str], list[Entry]] = {}
    floating: dict[str, list[Entry]] = {}
    for e in entries:
        if e.strength == "unmatchable":
            continue
        head = _fixed_head(e.name)
        if len(head) >= _PREFIX:
            by_prefix.setdefault((e.level, head[:_PREFIX]), []).append(e)
        else:
            floating.setdefault(e.level, []).append(e)
    rules = [(re.compile(r["path"]), r["subsystem"], r["cause"]) for r in data["file_rules"]]
    return ({k: tuple(v) for k, v in by_prefix.items()}, {k: tuple(v) for k, v in floating.items()}, rules,
            data["errno_readings"])


@functools.lru_cache(maxsize=None)
def _nccl_errno_not_when() -> dict[str, dict[str, str]]:
    """Errno readings that do not hold when the line names a call (regex): tools/catalogs/gen_nccl.py ERRNO_NOT_WHEN."""
    return _catalog("nccl")[0].get("errno_not_when", {})


def _fixed_head(fmt: str) -> str:
    """The literal start of a printf format (up to the first conversion or macro argument)."""
    m = re.search(r"%|\x00", fmt)
    return fmt[:m.start()] if m else fmt


def nccl_file_subsystem(src: str) -> str:
    """The subsystem of the NCCL source file a WARN line names (gen_nccl.py FILE_RULES)."""
    rules = _nccl_index()[2]
    short = src.split("src/")[-1]
    return next((s for rx, s, _ in rules if rx.search(short)), "")


def nccl_file_cause(src: str) -> str:
    """The cause the subsystem of an NCCL source file reads as (gen_nccl.py FILE_RULES), or ''."""
    rules = _nccl_index()[2]
    short = src.split("src/")[-1]
    return next((c for rx, _, c in rules if rx.search(short)), "")


def match_nccl(line: str) -> Match | None:
    """The NCCL catalog entry a WARN / failure INFO line comes from, or None.  Accepts a whole
    log line (the source file it names picks the subsystem of generic macros) or the bare
    message."""
    m = _NCCL_LINE.search(line)
    if m:
        level, text, src = m.group("level"), line[m.end():].rstrip(), m.group("file") or ""
    else:
        level, text, src = "WARN", line.strip(), ""
    by_prefix, floating, rules, errnos = _nccl_index()
    candidates = list(by_prefix.get((level, text[:_PREFIX]), ())) + [e for e in floating.get(level, ()) if e.key in text]
    hits = [e for e in candidates if _regex(e.regex).match(text)]
    if not hits:
        return None
    # The entry printed by the file the line names wins; then the one with most fixed text.
    hits.sort(key=lambda e: (not (src and any(src.endswith(f) for f in e.files)), -len(re.sub(r"%\S|\x00", "", e.name))))
    e = hits[0]
    generic = all(f.startswith("include/checks") for f in e.files)
    subsystem, file_cause = e.subsystem, e.cause
    if src and (generic or e.cause == ERRNO):
        short = src.split("src/")[-1]
        subsystem, file_cause = next(((s, c) for rx, s, c in rules if rx.search(short)), (e.subsystem, e.cause))
    cause, strength, detail = e.cause, e.strength, ""
    events = _catalog("nccl")[0].get("async_event_readings", {})
    if e.name in events.get("formats", ()) and not any(f in text for f in events.get("fatal", ())):
        # NCCL <= 2.18's one format for every HCA async event: a routine one (GID table change,
        # port active, LID change ...) is no fault (gen_nccl.py ASYNC_EVENT_READINGS, audit 6 M13)
        return Match(e, CONTEXT, "subsystem", "routine HCA async event")
    if generic and cause in (CONTEXT, ERRNO, ""):  # a generic macro: the file that called it decides
        cause, strength = file_cause or "", "subsystem"
    # An errno text on the line reads the failure (ENOSPC in shm, ENOMEM registering IB memory).
    for text_, reading in errnos.get(subsystem, {}).items():
        if text_ in text:
            unless = _nccl_errno_not_when().get(subsystem, {}).get(text_)
            if unless and re.search(unless, text):
                # the errno of a call its mechanism does not govern: no reading (nor the subsystem's)
                cause, strength, detail = CONTEXT, "subsystem", f"{text_} (not read: {unless})"
                break
            # an errno several causes give (ECONNREFUSED: nobody listened -- a dead peer as much as a
            # wrong address) reads the failure weakly (gen_nccl.py ERRNO_WEAK, audit 7 M2)
            weak = text_ in _catalog("nccl")[0].get("errno_weak", {}).get(subsystem, ())
            cause, strength, detail = reading, "subsystem" if weak else "specific", text_
            break
    else:
        if cause == ERRNO:  # no errno on the line: the subsystem's reading, weakly
            cause, strength = (file_cause if file_cause != ERRNO else "") or CONTEXT, "subsystem"
    if cause == CUDA:
        found = cuda_errors_in(text)
        if found:
            cause, detail = found[0].cause, found[0].name
            # A sticky CUDA error surfaces in whatever call comes next: NCCL reporting one
            # does not say whose kernel faulted, so it is only a weak sign of the job's code.
            strength = "subsystem" if cause == "app_error" else found[0].strength
            where = next(((s, c) for rx, s, c in rules if rx.search(src.split("src/")[-1])), None) if src else None
            readings, kernel_files = _nccl_cuda_readings()
            own = readings.get(found[0].name)
            if own and (not src or any(src.endswith(f) for f in kernel_files)):
                # NCCL's own call on its own kernels failed: NCCL's build has no kernel for this GPU.
                cause, strength, detail = own, "specific", f"{found[0].name} in NCCL's own kernel calls"
            elif cause == "app_error" and where and where[1] not in (CONTEXT, ERRNO, CUDA, "", "app_error"):
                # ...and inside a transport (p2p.cc's cudaIpcOpenMemHandle, nvls.cc's multicast
                # calls) the call that failed is the transport's own setup: its subsystem reads it.
                cause, detail = where[1], f"{found[0].name} in {where[0]}"
        else:
            cause, strength = CONTEXT, "subsystem"
    return Match(e, cause or "", strength, detail)


@functools.lru_cache(maxsize=None)
def _nccl_cuda_readings() -> tuple[dict[str, str], tuple[str, ...]]:
    """CUDA error name -> cause when NCCL's own call on its kernels returned it, and the source
    files making such calls (gen_nccl.py CUDA_READINGS; a line naming no file may be one)."""
    r = _catalog("nccl")[0].get("cuda_readings", {})
    return dict(r.get("readings", {})), tuple(r.get("files", ()))


def nccl_result(name_or_number: str | int) -> Entry | None:
    data, _ = _catalog("nccl")
    for r in data["results"]:
        if name_or_number in (r["name"], r["number"], str(r["number"])):
            return _entry("nccl", r)
    return None


def nccl_api(symbol: str) -> Entry | None:
    """The NCCL API function a process could not resolve ("undefined symbol: ncclCommRegister",
    its profiling twin pncclCommRegister too), with the release whose nccl.h first declares it
    (gen_nccl.py api_since): the libnccl the process loaded is older than that release.  None
    for a name NCCL never declared, declared since the oldest tag scanned, or later dropped."""
    data, _ = _catalog("nccl")
    name = symbol[1:] if symbol.startswith("pnccl") else symbol
    since = data.get("api", {}).get("since", {}).get(name)
    if since is None:
        return None
    return Entry(catalog="nccl", id=f"nccl.api.{name}", name=name, cause="nccl_version_old", strength="specific",
                 why=f"{name} is declared by nccl.h from NCCL {since} on (NVIDIA/nccl src/nccl.h.in): "
                     f"the libnccl the process loaded predates {since} (an older copy found first: "
                     "LD_LIBRARY_PATH, a system libnccl or another package's)",
                 versions=(since,), subsystem="api")


# --- CUDA ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _cuda_index() -> tuple[dict, dict, dict]:
    data, entries = _catalog("cuda")
    by_name = {e.name: e for e in entries}
    by_number = {}
    by_message = {}
    for e in entries:  # the runtime's entry is the reading for a bare number or text
        if e.catalog == "cuda" and e.id.startswith("cuda."):
            by_number.setdefault(e.number, e)
            if e.message:
                by_message.setdefault(e.message, e)
    for e in entries:
        by_number.setdefault(e.number, e)
    for msg, e in list(by_message.items()):  # lines drop (or the reader strips) a final period
        by_message.setdefault(msg.rstrip(".").strip(), e)
    for raw in data["entries"]:  # texts older runtimes printed for the same number
        for text in raw.get("older_messages", []):
            by_message.setdefault(text, by_name[raw["name"]])
    return by_name, by_number, by_message


def cuda_error(key: str | int) -> Entry | None:
    """A cudaError_t / CUresult by name (cudaErrorIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS),
    number, or the message text CUDA prints."""
    by_name, by_number, by_message = _cuda_index()
    if isinstance(key, int):
        return by_number.get(key)
    key = key.strip()
    if key.isdigit():
        return by_number.get(int(key))
    return by_name.get(key) or by_message.get(key)


_CUDA_NAME = re.compile(r"\b(cudaError[A-Z]\w{0,60}|CUDA_ERROR_[A-Z_]{2,60})\b")
_CUDA_TEXT = (r"(?:CUDA error|CUDA Error|CUDA driver error|CUDA Runtime Error|Cuda failure|cuda error|CUDA failure)"
              r"(?: (?P<number>\d{1,5}))?\W{0,3}(?P<text>[^'\"\n]{1,160})")
# Framework check macros that print cudaGetErrorString(err) after a number.  The number is the
# cudaError_t of the runtime the program was built with (renumbered in CUDA 10.1: invalid
# device ordinal was 10, now 101), so only the text is read.
#   THC/cutorch THCudaCheck:  "cuda runtime error (%d) : %s at %s:%d"
#                             "THCudaCheck FAIL file=%s line=%i error=%i : %s"
#   Caffe CUDA_CHECK (glog):  "Check failed: error == cudaSuccess (%d vs. 0)  %s"
#   PyTorch c10/cuda/CUDAFunctions.cpp device_count_impl: "... that might have already set an
#   error? Error %d: %s", raised, or warned by torch/cuda/__init__.py with TORCH_WARN's
#   " (Triggered internally at FILE:LINE.)" after it
_CUDA_CHECK_TEXT = (r"(?:cuda runtime error \(\d{1,5}\) :|THCudaCheck FAIL file=\S{1,200} line=\d{1,6} error=\d{1,5} :"
                    r"|== cudaSuccess \(\d{1,5} vs\. 0\) |might have already set an error\? Error \d{1,5}:)"
                    r" {1,2}(?P<text>[^'\"\n]{1,160}?)(?: at \S{1,200}:\d{1,6}| \(Triggered internally at [^)\n]{1,200}\))?\s*$")


@functools.lru_cache(maxsize=None)
def cuda_text_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """_CUDA_TEXT and _CUDA_CHECK_TEXT compiled, the first time a line mentions CUDA (compiling
    the bounded repeats of the second costs milliseconds of every start otherwise)."""
    return re.compile(_CUDA_TEXT), re.compile(_CUDA_CHECK_TEXT, re.MULTILINE)


def cuda_errors_in(line: str) -> list[Entry]:
    """The CUDA errors a line names: by name, or by the message after 'CUDA error:' /
    "Cuda failure N '...'"."""
    out: list[Entry] = []
    for m in _CUDA_NAME.finditer(line):
        e = cuda_error(m.group(1))
        if e and e not in out:
            out.append(e)
    if "uda" not in line and "UDA" not in line:
        return out
    _, _, by_message = _cuda_index()
    cuda_text, cuda_check_text = cuda_text_patterns()
    for m in cuda_text.finditer(line):
        text = m.group("text").strip().rstrip(".").strip()
        e = by_message.get(text)
        if e is None:  # the message may run on ("..., file.cu:12"): longest known prefix
            e = next((x for msg, x in sorted(by_message.items(), key=lambda kv: -len(kv[0]))
                      if text.startswith(msg)), None)
        if e is None and m.group("number"):
            e = cuda_error(int(m.group("number")))
        if e and e not in out:
            out.append(e)
    for m in cuda_check_text.finditer(line):
        text = m.group("text").strip().rstrip(".").strip()
        e = by_message.get(text)
        if e and e not in out:
            out.append(e)
    return out


# --- NVIDIA driver ------------------------------------------------------------------------

def xid(code: int):
    """The Xid catalog entry (knowledge/xid.toml, the whole NVIDIA catalog) for a code."""
    from postmortem import knowledge
    return knowledge.load().xids.get(int(code))


@functools.lru_cache(maxsize=None)
def _by_name(catalog: str) -> dict:
    _, entries = _catalog(catalog)
    return {e.name: e for e in entries} | {e.number: e for e in entries}


def sxid(code: int) -> Entry | None:
    return _by_name("sxid").get(int(code))


def nv_status(name: str) -> Entry | None:
    return _by_name("nv_status").get(name)


_NV_STATUS = re.compile(r"\b(NV_(?:ERR|WARN)_[A-Z0-9_]{2,60})\b")


@functools.lru_cache(maxsize=None)
def nv_status_numbers() -> dict[int, tuple[Entry, ...]]:
    """NV_STATUS entries by number (NVRM prints some codes as hex numbers)."""
    out: dict[int, list[Entry]] = {}
    for e in _catalog("nv_status")[1]:
        if e.number is not None:
            out.setdefault(int(e.number), []).append(e)
    return {k: tuple(v) for k, v in out.items()}


def nv_status_in(line: str) -> list[Entry]:
    return [e for e in (nv_status(m.group(1)) for m in _NV_STATUS.finditer(line)) if e is not None]


# --- PyTorch and kernel messages ----------------------------------------------------------

_KILLED_BY = re.compile(r"killed by signal: (\w{1,20})")
_RIP_MODULE = re.compile(r"RIP: \w{1,8}:(?P<func>[\w.]{1,120})\+0x[0-9a-f]{1,16}/0x[0-9a-f]{1,16} \[(?P<module>\w{1,60})\]")


@functools.lru_cache(maxsize=None)
def entries_pattern(name: str, ids: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for the named entries of a catalog (a rule reading a few lines of one family);
    an id the catalog does not hold is an error, not an empty match."""
    by_id = {e.id: e for e in _catalog(name)[1]}
    return re.compile("|".join(f"(?:{by_id[i].regex})" for i in ids))


def match_message(line: str, catalogs: tuple[str, ...] = ("pytorch", "kernel")) -> Match | None:
    """The PyTorch or kernel catalog entry a line carries (searched anywhere in the line)."""
    for name in catalogs:
        data, entries = _catalog(name)
        for e in entries:
            if e.key and e.key not in line:
                continue
            if not _regex(e.regex).search(line):
                cut = _cut_regex(e.regex)
                if cut is None or not cut.search(line):
                    continue
            cause, strength, detail = e.cause, e.strength, ""
            killed = _KILLED_BY.search(line) if name == "pytorch" else None
            if killed and killed.group(1) in data.get("signal_readings", {}):
                cause, strength, detail = data["signal_readings"][killed.group(1)], "specific", killed.group(1)
            errno_readings = {**data.get("errno_entry_readings", {}).get(e.id, {}),
                              **data.get("errno_readings", {}).get(e.subsystem, {})}
            errno = next(((t, c) for t, c in errno_readings.items() if t in line), None)
            if errno and cause in (CONTEXT, "nccl_network", "", errno[1]):
                # a per-attempt warning's errno reads the cause but stays a weak sign
                weak = e.id in data.get("errno_attempt_entries", ())
                cause, strength, detail = errno[1], "subsystem" if weak else "specific", errno[0]
            if e.id == "k.oops_rip":
                rip = _RIP_MODULE.search(line)
                module = rip.group("module") if rip else ""
                reading = next((c for prefix, c in data.get("module_readings", {}).items()
                                if module == prefix or module.startswith(prefix + "_")), "")
                if reading:
                    cause, strength, detail = reading, "specific", f"{rip.group('func')} [{module}]"
            return Match(e, cause, strength, detail)
    return None


# --- coverage -----------------------------------------------------------------------------

def _split(entries) -> tuple[int, int, int]:
    mapped = sum(1 for e in entries if e.cause and e.cause != CONTEXT)
    context = sum(1 for e in entries if e.cause == CONTEXT)
    return mapped, context, len(entries) - mapped - context


def coverage() -> list[CoverageRow]:
    """Per catalog and upstream version: entries mapped to a cause (including 'read the CUDA
    error / errno text'), marked context, or not yet mapped."""
    rows = []
    data, entries = _catalog("nccl")
    for level in ("WARN", "INFO"):
        for tag in data["commits"]:
            subset = [e for e in entries if e.level == level and tag in e.versions]
            if subset:
                rows.append(CoverageRow(f"nccl {level}", tag, len(subset), *_split(subset)))
    results = [_entry("nccl", r) for r in data["results"]]
    rows.append(CoverageRow("nccl ncclResult_t", data["version"], len(results), *_split(results)))
    data, entries = _catalog("cuda")
    for api, label in (("runtime", "cuda cudaError_t"), ("driver", "cuda CUresult")):
        subset = [e for e in entries if e.id.startswith("cuda." if api == "runtime" else "cu.")]
        rows.append(CoverageRow(label, data["version"], len(subset), *_split(subset)))
    from postmortem import knowledge
    xids = knowledge.load().xids.values()
    mapped = sum(1 for x in xids if x.cause)
    context = sum(1 for x in xids if not x.cause and x.role in ("context", "consequence"))
    rows.append(CoverageRow("nvidia Xid", "NVIDIA catalog via GPUd", len(xids), mapped, context, len(xids) - mapped - context))
    for name, label in (("sxid", "nvidia SXid"), ("nv_status", "nvidia NV_STATUS"), ("pytorch", "pytorch"), ("kernel", "kernel")):
        data, entries = _catalog(name)
        rows.append(CoverageRow(label, data["version"], len(entries), *_split(entries)))
    # NCCL's release history: a fix naming a variable, function or text can be a sign (rule
    # nccl-fixed-in-later-release); one naming only a component or a file is context; the rest --
    # issue numbers included, which no log line names -- name nothing the rule can use (audit 10 L7).
    data = _read("nccl_releases.json")
    fixes = [f for r in data["releases"] for f in r["fixes"]]
    named = sum(1 for f in fixes if set(f["ids"]) - {"component", "file", "issue"})
    component = sum(1 for f in fixes if set(f["ids"]) & {"component", "file"} and not set(f["ids"]) - {"component", "file", "issue"})
    rows.append(CoverageRow("nccl release fixes", f"{data['releases'][-1]['version']} ({data['pinned'][:8]})", len(fixes),
                            named, component, len(fixes) - named - component))
    return rows


def coverage_table() -> str:
    """coverage() as the text `postmortem rules --coverage` prints."""
    rows = coverage()
    lines = [f"{'catalog':20} {'upstream version':24} {'entries':>7} {'cause':>6} {'context':>7} {'unmapped':>8} {'covered':>7}"]
    for r in rows:
        covered = (r.mapped + r.context) / r.total if r.total else 1.0
        lines.append(f"{r.catalog:20} {r.version:24} {r.total:7} {r.mapped:6} {r.context:7} {r.unmapped:8} {covered:7.1%}")
    lines.append("cause = mapped to a cause (or to 'read the CUDA error / errno text it carries'); context = says what "
                 "failed, not why; generated by tools/catalogs/gen_*.py")
    return "\n".join(lines)


def argument_error_classes() -> frozenset[str]:
    """CPython's standard-library exception classes that are built-in argument errors by
    inheritance (ValueError, TypeError, LookupError, AttributeError, ArithmeticError; never an
    OSError or RuntimeError), by the name a traceback prints (tools/catalogs/gen_python_exceptions.py)."""
    return frozenset(_read("python_exceptions.json")["classes"])


def strerror_texts() -> frozenset[str]:
    """The C library's strerror(3) texts of every errno (tools/catalogs/gen_python_exceptions.py):
    what a library prints when it wraps a failed OS call in its own exception."""
    return frozenset(_read("python_exceptions.json").get("strerror", {}).values())


def os_error_classes() -> frozenset[str]:
    """Exception classes that are an OSError by inheritance, by the name a traceback prints: the
    standard library's and those of the network and storage clients the generator had installed
    (tools/catalogs/gen_python_exceptions.py)."""
    return frozenset(_read("python_exceptions.json").get("os_error_classes", {}))


def catalogs() -> dict[str, dict]:
    """Each catalog's header (upstream, version, generator) without its entries."""
    return {name: {k: v for k, v in _catalog(name)[0].items() if k not in ("entries", "results", "file_rules")}
            for name in ("nccl", "cuda", "sxid", "nv_status", "pytorch", "kernel")}
