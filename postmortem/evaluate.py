"""`postmortem eval`: verdicts against case folders that carry the truth.

A case folder holds `bundle/` and `truth.json` with `category` and `cause`.  The truth's
cause may be a descriptive name from a bug thread rather than one of our ids, so a
cause counts as right when it is our id, or when ALIASES maps the descriptive name to it.
"""
from __future__ import annotations

import json
from pathlib import Path

from postmortem.bundle import BundleError
from postmortem.run import Options, analyze

# Descriptive names used in case truths -> the project's cause ids.
ALIASES = {
    "ulimit_nofile": "fd_limit",
    "gpu_ecc_uncorrectable": "gpu_memory_ecc",
    "gpu_failure_cuda_unknown_error": "gpu_hardware_other",
    "host_dram_uncorrectable_mce": "host_memory_error",
    "gdr_blocked_by_pcie_acs": "nccl_network",
    "no_usable_socket_interface_in_container": "nccl_network",
    "unusable_rdma_hca_selected": "nccl_network",
    "rank0_preprocessing_exceeds_nccl_timeout": "straggler_timeout",
    "nccl_p2p_broken_iommu": "nccl_p2p",
    "nccl_version_mismatch_across_nodes": "nccl_version_mismatch",
    "nvlink_nvswitch_fault": "nvlink_fault",
    "nvls_fabric_manager_restarted_without_gpu_reset": "nvls_fabric",
    "host_ram_oom": "host_oom",
    "pcie_aer_uncorrected_fatal": "pcie_error",
    "xid79_fell_off_bus": "gpu_fell_off_bus",
}


def find_cases(dirs) -> list[Path]:
    cases: list[Path] = []
    for d in dirs:
        d = Path(d)
        if (d / "truth.json").is_file():
            cases.append(d)
            continue
        cases.extend(sorted(p.parent for p in d.glob("*/truth.json")))
    return cases


def evaluate(dirs, rules: tuple[Path, ...] = ()) -> dict:
    rows = []
    for case in find_cases(dirs):
        try:
            truth = json.loads((case / "truth.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            rows.append({"case": case.name, "error": f"truth.json: {exc}"})
            continue
        target = case / "bundle" if (case / "bundle").exists() else case
        expected_cause = ALIASES.get(truth.get("cause", ""), truth.get("cause", ""))
        try:
            a = analyze(target, Options(rules=rules))
        except BundleError as exc:
            rows.append({"case": case.name, "error": str(exc), "expected_category": truth.get("category"),
                         "expected_cause": expected_cause})
            continue
        v = a.verdict
        evidence_ok = all(_cited_line_exists(target, r.path, r.line, r.text) for r in (v.root.evidence if v.root else ()))
        rows.append({
            "case": case.name, "expected_category": truth.get("category"), "expected_cause": expected_cause,
            "truth_cause": truth.get("cause"), "category": v.category.value, "cause": v.cause,
            "confidence": v.confidence, "category_ok": v.category.value == truth.get("category"),
            "cause_ok": v.cause == expected_cause, "evidence_ok": evidence_ok, "leaning": v.leaning,
        })
    scored = [r for r in rows if "error" not in r]
    n = len(rows)
    cat = sum(r["category_ok"] for r in scored)
    cause = sum(r["cause_ok"] for r in scored)
    confident_wrong = [r["case"] for r in scored if r["confidence"] >= 0.8 and not r["cause_ok"]]
    labels = ["config", "comms", "hardware", "unknown"]
    matrix = {t: {p: 0 for p in labels} for t in labels}
    for r in scored:
        matrix.setdefault(r["expected_category"], {p: 0 for p in labels})[r["category"]] += 1
    return {"cases": rows, "total": n, "category_correct": cat, "cause_correct": cause,
            "confident_wrong": confident_wrong, "confusion": matrix,
            "evidence_ok": sum(r.get("evidence_ok", False) for r in scored)}


def _cited_line_exists(bundle: Path, artifact: str, line: int | None, text: str) -> bool:
    """The cited line is really in the bundle, as cited (directories only; archives trusted)."""
    if line is None or not bundle.is_dir():
        return True
    try:
        with open(bundle / artifact, encoding="utf-8", errors="replace", newline=None) as f:
            for i, got in enumerate(f, start=1):
                if i == line:
                    return got.rstrip("\r\n").replace("\x00", "") == text
    except OSError:
        return False
    return False


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "n/a"


def confusion_table(matrix: dict[str, dict[str, int]]) -> list[str]:
    """The confusion matrix as a table: one row per expected category, one column per
    predicted one, totals at the right and the bottom."""
    labels = list(matrix)
    predicted = list(dict.fromkeys(p for row in matrix.values() for p in row))
    width = max(8, *(len(x) for x in labels + predicted))
    first = max(len("expected / got"), *(len(x) for x in labels + ["total"]))
    head = f"{'expected / got':<{first}}"
    lines = ["confusion matrix (rows: expected category, columns: verdict):",
             "  " + head + "".join(f" {p:>{width}}" for p in predicted) + f" {'total':>{width}}"]
    for t in labels:
        row = matrix[t]
        lines.append(f"  {t:<{first}}" + "".join(f" {row.get(p, 0):>{width}}" for p in predicted)
                     + f" {sum(row.values()):>{width}}")
    totals = [sum(matrix[t].get(p, 0) for t in labels) for p in predicted]
    lines.append(f"  {'total':<{first}}" + "".join(f" {n:>{width}}" for n in totals) + f" {sum(totals):>{width}}")
    return lines


def render_lines(result: dict) -> list[str]:
    out = []
    for r in result["cases"]:
        if "error" in r:
            out.append(f"ERROR {r['case']}: {r['error']}")
            continue
        mark = "ok " if r["category_ok"] and r["cause_ok"] else "CAT" if not r["category_ok"] else "CAU"
        out.append(f"{mark} {r['case']:40} expected {r['expected_category']}/{r['expected_cause']:24} "
                   f"got {r['category']}/{r['cause']} ({r['confidence']:.2f})")
    n = result["total"]
    out += confusion_table(result["confusion"])
    if result["confident_wrong"]:
        out.append(f"confident (>=0.8) but wrong: {', '.join(result['confident_wrong'])}")
    out.append(f"evidence lines verified: {result['evidence_ok']}/{n}")
    out.append(f"cause: {result['cause_correct']}/{n} correct ({_pct(result['cause_correct'], n)})")
    out.append(f"category: {result['category_correct']}/{n} correct ({_pct(result['category_correct'], n)})")
    return out
