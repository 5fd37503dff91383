"""From per-bundle results to the triage document (schema postmortem.triage/1):
groups by signature, new/gone against a baseline, and the lemon-node ranking."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from postmortem import __version__
from postmortem.classify.signature import SCHEME
from postmortem.triage.work import BundleResult

SCHEMA = "postmortem.triage/1"
EXAMPLES = 5          # example bundles shown per group in the index and summary
LEMON_MIN = 2         # hardware verdicts on one host before it counts as a lemon


class BaselineError(ValueError):
    """The --baseline file is not a triage.json this tool can compare with."""


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc}") from exc
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("postmortem.triage/"):
        raise BaselineError(f"{path}: not a postmortem triage.json (schema postmortem.triage/1)")
    return doc


def build(results: list[BundleResult], inputs: list[str], baseline: dict[str, Any] | None = None,
          baseline_path: str | None = None) -> dict[str, Any]:
    before = _baseline_groups(baseline)
    once_gone = _baseline_gone(baseline)
    groups = [_group(sig, members, before, once_gone) for sig, members in _by_signature(results).items()]
    # An issue list: what needs a look first (regressed, new), then the biggest.
    groups.sort(key=lambda g: (not g["regressed"], not g["new"], -g["count"], g["signature"]))
    current = {g["signature"] for g in groups}
    gone = [_gone(g) for sig, g in sorted((before or {}).items()) if sig not in current]
    return {
        "schema": SCHEMA,
        "tool": {"name": "postmortem", "version": __version__},
        "signature_scheme": SCHEME,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": inputs,
        "baseline": _baseline_info(baseline, baseline_path),
        "totals": _totals(results, groups, gone),
        "groups": groups,
        "causes": roll_up(groups),
        "gone": gone,
        "lemon_nodes": lemon_nodes(results),
        "bundles": [_bundle(r) for r in sorted(results, key=lambda r: r.name)],
    }


def _by_signature(results: list[BundleResult]) -> dict[str, list[BundleResult]]:
    grouped: dict[str, list[BundleResult]] = defaultdict(list)
    for r in results:
        grouped[r.signature].append(r)
    return grouped


def _group(signature: str, members: list[BundleResult], before: dict[str, dict] | None,
           once_gone: set[str]) -> dict[str, Any]:
    members = sorted(members, key=lambda r: (r.crash_time or r.seen or "", r.name))
    # First and last seen are crash times only: a boot time or a file's time says when a
    # log was written or copied, not when the job died.
    seen = [r.crash_time for r in members if r.crash_time]
    gpus = Counter(g for r in members for g in r.gpus)
    first = members[0]
    return {
        "signature": signature,
        "category": first.category,
        "cause": first.cause,
        "count": len(members),
        "new": signature not in before if before is not None else True,
        # Gone in the baseline's own comparison, and back now: Sentry's "regressed".
        "regressed": signature in once_gone and (before is None or signature not in before),
        "first_seen": min(seen) if seen else None,
        "last_seen": max(seen) if seen else None,
        "hosts": sorted({h for r in members for h in r.hosts}),
        "gpus": [{"gpu": g, "bundles": n} for g, n in gpus.most_common()],
        "gpu_spread": gpu_spread(gpus),
        "summary": first.summary,
        "error": first.error,
        "explain": list(first.explain),
        "bundles": [r.path for r in members],
        "names": [r.name for r in members],
        "examples": [r.name for r in members[:EXAMPLES]],
    }


def roll_up(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Groups rolled up by cause: one line per cause, its signatures under it (in group
    order, so new and regressed ones come first)."""
    by_cause: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for g in groups:
        by_cause[(g["category"], g["cause"])].append(g)
    out = []
    for (category, cause), gs in by_cause.items():
        firsts = [g["first_seen"] for g in gs if g["first_seen"]]
        lasts = [g["last_seen"] for g in gs if g["last_seen"]]
        out.append({"category": category, "cause": cause, "count": sum(g["count"] for g in gs),
                    "new": sum(1 for g in gs if g["new"]), "regressed": sum(1 for g in gs if g["regressed"]),
                    "first_seen": min(firsts) if firsts else None, "last_seen": max(lasts) if lasts else None,
                    "hosts": sorted({h for g in gs for h in g["hosts"]}),
                    "signatures": [g["signature"] for g in gs]})
    out.sort(key=lambda c: (not c["regressed"], not c["new"], -c["count"], c["cause"]))
    return out


def gpu_spread(gpus: Counter) -> str:
    """Whether one GPU keeps failing (a bad card) or failures are spread (a fleet issue)."""
    if not gpus:
        return "no GPU named"
    if len(gpus) == 1:
        gpu, n = next(iter(gpus.items()))
        return f"one GPU repeats ({gpu}, {n} bundles)" if n > 1 else f"one GPU ({gpu})"
    top, n = gpus.most_common(1)[0]
    lead = f"; {top} in {n} bundles" if n > 1 else ""
    return f"spread over {len(gpus)} GPUs{lead}"


def lemon_nodes(results: list[BundleResult]) -> list[dict[str, Any]]:
    """Hosts ranked by hardware verdicts; `repeated` marks a likely lemon (drain it)."""
    per_host: dict[str, list[BundleResult]] = defaultdict(list)
    for r in results:
        if r.category == "hardware":
            for host in r.hosts:
                per_host[host].append(r)
    ranked = sorted(per_host.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"host": host, "hardware_bundles": len(rs), "repeated": len(rs) >= LEMON_MIN,
             "causes": sorted({r.cause for r in rs}),
             "gpus": sorted({g.split(" ", 1)[1] for r in rs for g in r.gpus if g.split(" ", 1)[0] == host}),
             "bundles": sorted(r.name for r in rs)} for host, rs in ranked]


def _baseline_groups(baseline: dict[str, Any] | None) -> dict[str, dict] | None:
    if baseline is None:
        return None
    return {g["signature"]: g for g in baseline.get("groups", []) if isinstance(g, dict) and "signature" in g}


def _baseline_gone(baseline: dict[str, Any] | None) -> set[str]:
    if baseline is None:
        return set()
    return {g["signature"] for g in baseline.get("gone", []) if isinstance(g, dict) and "signature" in g}


def _baseline_info(baseline: dict[str, Any] | None, path: str | None) -> dict[str, Any] | None:
    if baseline is None:
        return None
    scheme = baseline.get("signature_scheme")
    return {"path": path, "generated": baseline.get("generated"), "signature_scheme": scheme,
            "comparable": scheme == SCHEME}


def _gone(g: dict[str, Any]) -> dict[str, Any]:
    return {k: g.get(k) for k in ("signature", "category", "cause", "count", "last_seen")}


def _totals(results: list[BundleResult], groups: list[dict], gone: list[dict]) -> dict[str, int]:
    return {"bundles": len(results), "groups": len(groups),
            "errors": sum(1 for r in results if r.error is not None),
            "hardware": sum(1 for r in results if r.category == "hardware"),
            "unknown": sum(1 for r in results if r.category == "unknown"),
            "new": sum(1 for g in groups if g["new"]), "gone": len(gone),
            "regressed": sum(1 for g in groups if g["regressed"]),
            "timeouts": sum(1 for r in results if r.timed_out), "causes": len({g["cause"] for g in groups})}


def _bundle(r: BundleResult) -> dict[str, Any]:
    return {"name": r.name, "path": r.path, "signature": r.signature, "category": r.category,
            "cause": r.cause, "confidence": r.confidence, "summary": r.summary, "hosts": list(r.hosts),
            "gpus": list(r.gpus), "seen": r.seen, "seen_basis": r.seen_basis, "crash_time": r.crash_time,
            "timed_out": r.timed_out, "error": r.error,
            "report": None if r.error is not None else f"bundles/{r.name}.html", "seconds": r.seconds}


# ------------------------------------------------------------------------ --fail-on

FAIL_ON = {
    "new": lambda doc: any(g["new"] for g in doc["groups"]),
    "hardware": lambda doc: doc["totals"]["hardware"] > 0,
    "any": lambda doc: any(b["category"] != "unknown" for b in doc["bundles"]),  # errors count too
}


def fails(doc: dict[str, Any], condition: str | None) -> bool:
    return bool(condition) and FAIL_ON[condition](doc)
