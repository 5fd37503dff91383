"""Score case folders (each holding truth.json and a bundle) and print the figures a sweep records.

    python tools/sweep_score.py [--out scores.tsv] DIR...

DIR is a case folder or a folder of case folders (postmortem.evaluate.find_cases).  Prints one
line of totals, one of the unknown verdicts by their lean, then every wrong-category claim and every confident (>= 0.8) wrong cause; --out
writes one row per case (case, truth, verdict, confidence, ok flags, lean) for later comparison.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from postmortem.evaluate import evaluate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    result = evaluate([Path(d) for d in args.dirs])
    rows = result["cases"]
    # the per-case rows first: a reader that stops early (`| head -1`) must not lose them
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for r in rows:
                if "error" in r:
                    f.write(f"{r['case']}\tERROR\t{r['error']}\n")
                    continue
                f.write("\t".join([r["case"], f"{r['expected_category']}/{r['expected_cause']}",
                                   f"{r['category']}/{r['cause']}", f"{r['confidence']:.2f}",
                                   str(int(r["category_ok"])), str(int(r["cause_ok"])), r["leaning"] or "-"]) + "\n")
    wrongcat = [r for r in rows if "error" not in r and r["category"] != "unknown" and not r["category_ok"]]
    print(f"cases {result['total']} category {result['category_correct']} cause {result['cause_correct']} "
          f"confident_wrong {len(result['confident_wrong'])} wrong_category_claims {len(wrongcat)}")
    # The unknown verdicts by their lean: what claiming every lean would have scored, and what not
    unknown = [r for r in rows if "error" not in r and r["cause"] == "unknown"]
    right = sum(1 for r in unknown if r["leaning"] and r["leaning"] == r["expected_cause"])
    lean_wrong = sum(1 for r in unknown if r["leaning"] and r["leaning"] != r["expected_cause"])
    print(f"unknown {len(unknown)}: leaning right {right}, leaning wrong {lean_wrong}, no lean {len(unknown) - right - lean_wrong}")
    for r in wrongcat:
        print(f"wrongcat {r['case']} truth {r['expected_category']}/{r['expected_cause']} got {r['category']}/{r['cause']} {r['confidence']:.2f}")
    for c in result["confident_wrong"]:
        print(f"confident {c}")
    for r in rows:
        if "error" in r:
            print(f"ERROR {r['case']}: {r['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
