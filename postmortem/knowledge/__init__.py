"""The project's knowledge, kept as data: causes, the Xid catalog, message patterns.

Loaded once with importlib.resources (works from a wheel), validated on load: a bad
entry raises KnowledgeError naming the file and entry.  `--rules FILE` adds entries
from a user file in the same format (see README.md here).

The TOML files are the source.  Parsing them costs more than a one-line bundle's whole
analysis, so tools/prepare_knowledge.py writes what they parse to (and what the full
validation found, message patterns' named groups) into prepared.json, with the sha256 of
each file's text; a file is read from there only while its digest still holds, otherwise
from its TOML as before (tests/test_prepared_knowledge.py fails until the file is
regenerated).  Message regexes are compiled the first time a line carries one of their
keywords, except in user rule files (compiled on load, to report a bad pattern).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from postmortem.packaged import packaged, sha256_hex

CATEGORIES = ("config", "comms", "hardware", "unknown")
ROLES = ("root", "symptom", "context")
SEVERITIES = ("debug", "info", "warning", "error", "fatal")


class KnowledgeError(ValueError):
    """A knowledge file has an entry that cannot be used."""


@dataclass(frozen=True, slots=True)
class Cause:
    id: str
    category: str
    title: str
    explanation: str
    remediation: tuple[str, ...]
    commands: tuple[str, ...]        # shell commands that confirm it, each pasteable as it stands
    steps: tuple[str, ...]           # the same in prose, for what is not a command
    collect: tuple[str, ...]
    source: str
    explains: tuple[str, ...] = ()   # causes whose signs this one produces as fallout
    # the same cause read from a job that hung with no timeout in the bundle (a measured stall):
    # its title, explanation, fixes and checks must not speak of a timeout that never fired
    without_timeout: "Cause | None" = None
    # the same cause read by one particular reading (the root's signal -> its wording): a reading that
    # names what was wrong more exactly than the cause's general fixes (audit 11 M2: the launcher's
    # check of the rendezvous endpoint is comms set-up, but its fix is the endpoint, never IB/RoCE)
    by_reading: tuple[tuple[str, "Cause"], ...] = ()

    @property
    def next_steps(self) -> tuple[str, ...]:
        """Commands, then prose steps: the one list of older versions (JSON `next_steps`)."""
        return self.commands + self.steps

    def for_reading(self, signal: str) -> "Cause":
        """This cause as worded for the reading `signal` (by_reading), else itself."""
        return next((w for s, w in self.by_reading if s == signal), self)


@dataclass(frozen=True, slots=True)
class XidInfo:
    code: int
    name: str
    meaning: str
    cause: str          # a cause id, "app_fault", or "" (never a root)
    weight: float
    role: str
    immediate: str
    investigatory: str
    strength: str = ""  # strong | weak, per entry from NVIDIA's catalog (xid.toml); "" -> weak


@dataclass(frozen=True, slots=True)
class MessagePattern:
    id: str
    keywords: tuple[str, ...]
    pattern: str        # the regex's text (see `regex`)
    severity: str
    cause: str
    weight: float
    role: str
    sample: str
    source: str
    origin: str         # file the entry came from
    advice: str = ""    # a fix specific to this message, shown first when it is root evidence
    weight_cap: float = 0.97  # support from many such lines stops here (lines every rank prints)
    strength: str = ""  # strong: one line is enough to claim; weak: needs an independent second sign
    death: str = ""     # how such a line says a process died (see registry.DEATHS), "" when it does not
    fields: tuple[str, ...] = ()  # the pattern's named groups (the event's data keys)

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern, compiled on first use (a line carrying one of the keywords)."""
        compiled = _COMPILED.get(self.pattern)
        if compiled is None:
            compiled = _COMPILED[self.pattern] = re.compile(self.pattern)
        return compiled


_COMPILED: dict[str, re.Pattern[str]] = {}


@dataclass(frozen=True, slots=True)
class Knowledge:
    causes: dict[str, Cause]
    xids: dict[int, XidInfo]
    messages: tuple[MessagePattern, ...]


# The packaged TOML files prepared.json carries (paths relative to this folder).
SOURCES = ("causes.toml", "xid.toml", "messages.toml", "signals.toml", "catalogs/readings.toml")
PREPARED = "prepared.json"


def source_text(name: str) -> str:
    return packaged("postmortem.knowledge", *name.split("/")).read_text(encoding="utf-8")


def text_digest(text: str) -> str:
    return sha256_hex(text.encode("utf-8"))


@functools.lru_cache(maxsize=None)
def _prepared() -> dict:
    try:
        return json.loads(packaged("postmortem.knowledge", PREPARED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def prepared_entry(name: str) -> dict | None:
    """The prepared form of one packaged TOML file, when it was made from exactly its text."""
    entry = _prepared().get("sources", {}).get(name)
    if entry is None or entry.get("sha256") != text_digest(source_text(name)):
        return None
    return entry


def parse_toml(name: str) -> dict:
    """One packaged TOML file parsed from its text (what prepared.json is made of)."""
    import tomllib

    try:
        return tomllib.loads(source_text(name))
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeError(f"{name}: {exc}") from exc


@functools.lru_cache(maxsize=None)
def source(name: str) -> dict:
    """The data of a packaged TOML file (one of SOURCES): from prepared.json while it is
    current, else parsed from the TOML.  Shared between callers: never modify it."""
    entry = prepared_entry(name)
    return entry["data"] if entry is not None else parse_toml(name)


def _need(entry: dict, key: str, where: str, kind=str):
    if key not in entry:
        raise KnowledgeError(f"{where}: missing field '{key}'")
    value = entry[key]
    if not isinstance(value, kind):
        raise KnowledgeError(f"{where}: field '{key}' must be {kind.__name__}")
    return value


def _str_list(entry: dict, key: str, where: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise KnowledgeError(f"{where}: field '{key}' must be a list of strings")
    return value


def parse_causes(data: dict, origin: str) -> dict[str, Cause]:
    causes = {}
    for cid, e in data.items():
        where = f"{origin} [{cid}]"
        if not re.fullmatch(r"[a-z][a-z0-9_]*", cid):
            raise KnowledgeError(f"{where}: cause ids are snake_case")
        category = _need(e, "category", where)
        if category not in CATEGORIES:
            raise KnowledgeError(f"{where}: category must be one of {CATEGORIES}")
        if not any(k in e for k in ("commands", "steps", "next_steps")):
            raise KnowledgeError(f"{where}: missing field 'commands' (or 'steps')")
        causes[cid] = Cause(
            id=cid, category=category, title=_need(e, "title", where),
            explanation=_need(e, "explanation", where),
            remediation=tuple(_need(e, "remediation", where, list)),
            commands=tuple(_str_list(e, "commands", where)),
            # `next_steps` (older rule files) held commands and prose alike: shown as prose.
            steps=tuple(_str_list(e, "steps", where)) + tuple(_str_list(e, "next_steps", where)),
            collect=tuple(e.get("collect", [])), source=_need(e, "source", where),
            explains=tuple(e.get("explains", [])),
            without_timeout=_without_timeout(cid, category, e, where),
            by_reading=_by_reading(cid, category, e, where))
    return causes


def _by_reading(cid: str, category: str, e: dict, where: str) -> tuple[tuple[str, "Cause"], ...]:
    """A cause's [<id>.by_reading.<name>] tables: the wording when its root is one of `signals`."""
    out = []
    for name, w in (e.get("by_reading") or {}).items():
        at = f"{where}.by_reading.{name}"
        wording = _wording(cid, category, e, w, at)
        out.extend((signal, wording) for signal in _str_list(w, "signals", at))
    return tuple(out)


def _without_timeout(cid: str, category: str, e: dict, where: str) -> "Cause | None":
    """A cause's [<id>.without_timeout] table: its wording for a hang with no timeout."""
    w = e.get("without_timeout")
    return None if w is None else _wording(cid, category, e, w, where + ".without_timeout")


def _wording(cid: str, category: str, e: dict, w: dict, at: str) -> "Cause":
    """One cause in other words (table `w` under entry `e`): its own title, explanation, fixes and
    checks; collect, source and explains from the entry unless the table names its own."""
    return Cause(id=cid, category=category, title=_need(w, "title", at), explanation=_need(w, "explanation", at),
                 remediation=tuple(_need(w, "remediation", at, list)), commands=tuple(_str_list(w, "commands", at)),
                 steps=tuple(_str_list(w, "steps", at)), collect=tuple(w.get("collect", e.get("collect", []))),
                 source=w.get("source", e.get("source", "")), explains=tuple(e.get("explains", [])))


def parse_xids(data: dict, origin: str) -> dict[int, XidInfo]:
    xids = {}
    for code, e in data.items():
        where = f"{origin} [{code}]"
        if not code.isdigit():
            raise KnowledgeError(f"{where}: Xid codes are numbers")
        role = _need(e, "role", where)
        if role not in ("root", "consequence", "context"):
            raise KnowledgeError(f"{where}: role must be root, consequence or context")
        if e.get("strength", "") not in ("", "strong", "weak") or (e.get("strength") == "strong" and role != "root"):
            raise KnowledgeError(f"{where}: strength must be strong (a root Xid) or weak")
        xids[int(code)] = XidInfo(
            code=int(code), name=_need(e, "name", where), meaning=_need(e, "meaning", where),
            cause=_need(e, "cause", where), weight=float(_need(e, "weight", where, (int, float))),
            role=role, immediate=e.get("immediate", ""), investigatory=e.get("investigatory", ""),
            strength=e.get("strength", ""))
    return xids


def parse_messages(data: dict, origin: str, groups: dict[str, list[str]] | None = None,
                   user: bool = False) -> tuple[MessagePattern, ...]:
    """The [[message]] entries; each pattern is compiled here (a bad one is reported) unless
    `groups` gives its named groups (prepared.json: compiled and checked when prepared)."""
    out = []
    for i, e in enumerate(data.get("message", []), start=1):
        where = f"{origin} message #{i} ({e.get('id', '?')})"
        pattern = _need(e, "pattern", where)
        if groups is not None and e.get("id") in groups:
            fields = tuple(groups[e["id"]])
        else:
            try:
                fields = tuple(re.compile(pattern).groupindex)
            except re.error as exc:
                raise KnowledgeError(f"{where}: pattern does not compile: {exc}") from exc
        severity, role = _need(e, "severity", where), _need(e, "role", where)
        if severity not in SEVERITIES:
            raise KnowledgeError(f"{where}: severity must be one of {SEVERITIES}")
        if role not in ROLES:
            raise KnowledgeError(f"{where}: role must be one of {ROLES}")
        keywords = tuple(_need(e, "keywords", where, list))
        if not keywords:
            raise KnowledgeError(f"{where}: at least one keyword is needed")
        out.append(MessagePattern(
            id=_need(e, "id", where), keywords=keywords, pattern=pattern, severity=severity,
            cause=e.get("cause", ""), weight=float(e.get("weight", 0.0)), role=role,
            sample=_need(e, "sample", where), source=_need(e, "source", where), origin=origin,
            advice=e.get("advice", ""), weight_cap=float(e.get("weight_cap", 0.97)),
            strength=_strength(e, where, user), death=e.get("death", ""), fields=fields))
    return tuple(out)


def _strength(e: dict, where: str, user: bool = False) -> str:
    """Causal patterns say whether one line is enough to claim (strong) or needs an
    independent second sign (weak).  A built-in one that does not say is weak; a user rule
    file written before strengths existed says it with its weight: at least the standard strong
    weight (catalogs/readings.toml strength.specific) is strong (audit 5 M6)."""
    causal = bool(e.get("cause")) and float(e.get("weight", 0.0)) > 0
    default = ("strong" if user and float(e.get("weight", 0.0)) >= strong_weight() else "weak") if causal else ""
    strength = e.get("strength", default)
    if strength not in ("", "strong", "weak"):
        raise KnowledgeError(f"{where}: strength must be strong or weak")
    return strength


def strong_weight() -> float:
    """The standard weight of a strong sign (catalogs/readings.toml strength.specific)."""
    from postmortem.knowledge.registry import source

    return float(source("catalogs/readings.toml")["strength"]["specific"]["weight"])


def unstated_strengths(path: Path) -> list[str]:
    """What a user rule file's causal [[message]] entries without `strength` are read as."""
    import tomllib

    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for e in data.get("message", []):
        if "strength" in e or not e.get("cause") or float(e.get("weight", 0.0)) <= 0:
            continue
        strong = float(e["weight"]) >= strong_weight()
        out.append(f"message '{e.get('id', '?')}' gives no strength: read as {'strong' if strong else 'weak'} from its "
                   f"weight {float(e['weight']):.2f} (strong from {strong_weight():.2f})"
                   + ("" if strong else "; a weak sign never claims alone (add strength = \"strong\" if one line proves it)"))
    return out


def validate(k: Knowledge, samples_checked: tuple[MessagePattern, ...] = ()) -> None:
    """Cross-file checks: every referenced cause exists, ids unique, samples match (except
    for `samples_checked`, the prepared built-in patterns, checked when they were prepared)."""
    seen: set[str] = set()
    checked = {id(m) for m in samples_checked}
    for m in k.messages:
        if m.id in seen:
            raise KnowledgeError(f"{m.origin}: message id '{m.id}' is defined twice")
        seen.add(m.id)
        if m.cause not in ("", "xid") and m.cause not in k.causes:
            raise KnowledgeError(f"{m.origin}: message '{m.id}' names unknown cause '{m.cause}'")
        if id(m) in checked:
            continue
        if not any(kw in m.sample for kw in m.keywords) or not m.regex.search(m.sample):
            raise KnowledgeError(f"{m.origin}: message '{m.id}' does not match its own sample")
    for c in k.causes.values():
        for other in c.explains:
            if other not in k.causes:
                raise KnowledgeError(f"causes.toml [{c.id}]: explains unknown cause '{other}'")
    for x in k.xids.values():
        if x.cause not in ("", "app_fault") and x.cause not in k.causes:
            raise KnowledgeError(f"xid.toml [{x.code}]: unknown cause '{x.cause}'")


@functools.lru_cache(maxsize=None)
def _builtin() -> Knowledge:
    prepared = prepared_entry("messages.toml")
    if prepared is not None:
        messages = parse_messages(prepared["data"], "messages.toml", prepared["groups"])
    else:
        messages = parse_messages(source("messages.toml"), "messages.toml")
    k = Knowledge(
        causes=parse_causes(source("causes.toml"), "causes.toml"),
        xids=parse_xids(source("xid.toml"), "xid.toml"),
        messages=messages,
    )
    validate(k, messages if prepared is not None else ())   # (_samples_checked, without digesting again)
    return k


def _samples_checked(k: Knowledge) -> tuple[MessagePattern, ...]:
    """The built-in patterns whose samples were matched when prepared.json was made."""
    return k.messages if prepared_entry("messages.toml") is not None else ()


def prepare() -> dict:
    """What tools/prepare_knowledge.py writes to prepared.json: each source's data parsed
    from its TOML (after the full validation, samples included) and its digest."""
    k = Knowledge(causes=parse_causes(parse_toml("causes.toml"), "causes.toml"),
                  xids=parse_xids(parse_toml("xid.toml"), "xid.toml"),
                  messages=parse_messages(parse_toml("messages.toml"), "messages.toml"))
    validate(k)
    out: dict = {"generator": "tools/prepare_knowledge.py", "sources": {}}
    for name in SOURCES:
        out["sources"][name] = {"sha256": text_digest(source_text(name)), "data": parse_toml(name)}
    out["sources"]["messages.toml"]["groups"] = {m.id: list(m.fields) for m in k.messages}
    return out


def load(extra_rules: tuple[Path, ...] = ()) -> Knowledge:
    """The built-in knowledge, extended by user rule files (same TOML layout: [causes.*],
    [xid.*] and [[message]] tables in one file)."""
    k = _builtin()
    if not extra_rules:
        return k
    import tomllib

    causes, xids, messages = dict(k.causes), dict(k.xids), list(k.messages)
    for path in extra_rules:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise KnowledgeError(f"{path}: {exc}") from exc
        causes.update(parse_causes(data.get("causes", {}), str(path)))
        xids.update(parse_xids(data.get("xid", {}), str(path)))
        # User patterns go first so they can override a built-in reading of a line.
        messages[:0] = parse_messages(data, str(path), user=True)
    merged = Knowledge(causes, xids, tuple(messages))
    validate(merged, _samples_checked(k))
    return merged
