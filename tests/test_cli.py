"""The CLI as users run it: a subprocess on real fixtures, asserting on the JSON contract."""
import io
import random
import re
import json
import os
import tarfile
import zipfile


from conftest import CORPUS, FIXTURES, analyze_json, run_cli

VERDICT_KEYS = {"category", "cause", "confidence", "summary", "evidence", "symptoms", "remediation", "next_steps"}
EVENT_KEYS = {"ts", "ts_basis", "uncertainty_s", "source", "line", "host", "pid", "tid", "rank", "kind", "text"}


def test_analyze_json_contract(tmp_path):
    v = analyze_json(CORPUS / "shm-nccl-k8s-ci-08" / "bundle", tmp_path)
    assert v["schema"] == "postmortem.verdict/1"
    assert VERDICT_KEYS <= set(v["verdict"])
    assert v["verdict"]["category"] == "config" and v["verdict"]["cause"] == "shm_exhausted"
    assert 0 < v["verdict"]["confidence"] <= 1
    ev = v["verdict"]["evidence"][0]
    assert ev["artifact"] == "nccl.log" and isinstance(ev["line"], int) and "No space left" in ev["text"]
    assert v["timeline"] and EVENT_KEYS <= set(v["timeline"][0])
    assert {a["status"] for a in v["artifacts"]} == {"ok"}
    assert re.match(r"sig\d+:config:shm_exhausted:", v["signature"])
    assert v["verdict"]["leaning"] is None   # a claim has no lean


def test_an_unknown_verdict_names_its_lean_in_the_json(tmp_path):
    """Lightning's observer reporting a local rank killed by SIGKILL and nothing else: one weak
    sign (a lone SIGKILL leans host_oom), so the verdict is unknown and `leaning` says where to
    look -- a field scripts can route on (real output: fixtures/launcher/lightning_child_killed.py)."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "train.log").write_bytes((FIXTURES / "launcher" / "lightning_child_kill.log").read_bytes())
    v = analyze_json(bundle, tmp_path)
    assert v["verdict"]["cause"] == "unknown" and v["verdict"]["confidence"] == 0
    assert v["verdict"]["leaning"] == {"cause": "host_oom", "category": "config", "support": 0.25}
    assert "leaning host_oom" in v["verdict"]["summary"]


def test_every_event_has_a_basis_and_inferred_times_say_so(tmp_path):
    v = analyze_json(CORPUS / "shm-nccl-k8s-ci-08" / "bundle", tmp_path)
    bases = {e["ts_basis"] for e in v["timeline"]}
    assert bases <= {"measured", "converted", "anchored", "file-mtime", "order-only"}
    for e in v["timeline"]:
        if e["ts_basis"] != "measured" and e["ts"]:
            assert e["ts_note"], e


def test_default_html_goes_to_reports_folder(tmp_path):
    bundle = tmp_path / "mybundle"
    bundle.mkdir()
    (bundle / "dmesg.txt").write_bytes((CORPUS / "xid79-fell-off-bus-01/bundle/dmesg.txt").read_bytes())
    r = run_cli("analyze", str(bundle), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "reports" / "mybundle.html").is_file()
    assert "gpu_fell_off_bus" in r.stdout


def test_quiet_prints_only_problems(tmp_path):
    r = run_cli("analyze", str(CORPUS / "xid79-fell-off-bus-01/bundle"), "-q", "--html", "-")
    assert r.returncode == 0
    assert "Timeline" not in r.stdout and "gpu_fell_off_bus" in r.stdout


def test_markdown_to_stdout():
    r = run_cli("analyze", str(CORPUS / "oom-host-oomkiller-fsdp-01/bundle"), "--markdown", "-", "--html", "-")
    assert r.returncode == 0
    assert r.stdout.startswith("## postmortem: config / `host_oom`")


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("analyze", str(tmp_path / "missing")).returncode == 2
    assert run_cli("analyze").returncode == 2
    assert run_cli("no-such-command").returncode == 2
    r = run_cli("analyze", str(tmp_path / "missing"))
    assert "no such file" in r.stderr and "Traceback" not in r.stderr


def test_corrupt_archive_is_usage_error(tmp_path):
    bad = tmp_path / "bundle.tar.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    r = run_cli("analyze", str(bad), "--html", "-")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_help_for_every_subcommand():
    for cmd in ("analyze", "eval", "explain", "rules"):
        r = run_cli(cmd, "--help")
        assert r.returncode == 0 and "usage: postmortem" in r.stdout


def test_tarball_read_in_place_and_hostile_members_refused(tmp_path):
    src = CORPUS / "pcie-aer-fatal-01/bundle/dmesg.txt"
    tgz = tmp_path / "b.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(src, arcname="node1/dmesg.txt")
        evil = tarfile.TarInfo("../../escape.txt")
        data = b"RuntimeError: Too many open files\n"
        evil.size = len(data)
        tar.addfile(evil, io.BytesIO(data))
        link = tarfile.TarInfo("passwd")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    before = sorted(os.listdir(tmp_path))
    v = analyze_json(tgz, tmp_path)
    assert v["verdict"]["cause"] == "pcie_error"
    arts = {a["path"]: a for a in v["artifacts"]}
    assert arts["../../escape.txt"]["status"] == "skipped" and "refused" in arts["../../escape.txt"]["message"]
    assert arts["passwd"]["status"] == "skipped"
    assert not (tmp_path.parent / "escape.txt").exists()
    assert sorted(os.listdir(tmp_path)) == sorted(before + ["r.html", "v.json"])


def test_zip_bundle(tmp_path):
    z = tmp_path / "b.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(CORPUS / "ecc-uncorrectable-01/bundle/stderr.log", "logs/stderr.log")
        zf.writestr("/abs/path.txt", "x")
    v = analyze_json(z, tmp_path)
    assert v["verdict"]["cause"] == "gpu_memory_ecc"
    assert any(a["status"] == "skipped" and "absolute" in a["message"] for a in v["artifacts"])


def test_links_leaving_the_bundle_are_not_followed(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.\n")
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "train.log").write_bytes((CORPUS / "cfg-ulimit-fd-shapeworks-02/bundle/train.log").read_bytes())
    (bundle / "dmesg.txt").symlink_to(outside)
    os.mkfifo(bundle / "pipe")
    v = analyze_json(bundle, tmp_path)
    assert v["verdict"]["cause"] == "fd_limit"
    arts = {a["path"]: a for a in v["artifacts"]}
    assert arts["dmesg.txt"]["status"] == "skipped" and "leaves the bundle" in arts["dmesg.txt"]["message"]
    assert arts["pipe"]["status"] == "skipped"


def test_binary_junk_gets_a_message_and_the_rest_is_analysed(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "junk.bin").write_bytes(random.Random(1234).randbytes(20000))
    (bundle / "log.txt").write_bytes((CORPUS / "oom-host-oomkiller-fsdp-01/bundle/dmesg.txt").read_bytes())
    v = analyze_json(bundle, tmp_path)
    assert v["verdict"]["cause"] == "host_oom"
    junk = next(a for a in v["artifacts"] if a["path"] == "junk.bin")
    assert junk["status"] == "skipped" and "binary" in junk["message"]


def test_mixed_file_is_split_among_parsers(tmp_path):
    """A log.txt that mixes NCCL lines with training stderr is read by content, not by name."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    text = ((CORPUS / "shm-dataloader-k8s-pangeo-02/bundle/train.log").read_text()
            + (CORPUS / "multi-roce-hca-enodev-08/bundle/nccl.log").read_text())
    (bundle / "log.txt").write_text(text)
    v = analyze_json(bundle, tmp_path)
    kinds = {e["kind"] for e in v["timeline"]}
    # NCCL lines went to the NCCL parser, the traceback to the traceback parser, and the
    # DataLoader's message (which no format parser reads) to the known-message matcher.
    assert {"nccl.warn", "nccl.error_chain", "py.exception", "msg.dataloader_bus_error"} <= kinds


def test_empty_bundle_is_unknown_and_says_what_to_collect(tmp_path):
    bundle = tmp_path / "empty"
    bundle.mkdir()
    (bundle / "notes.txt").write_text("the job died overnight, no idea why\n")
    v = analyze_json(bundle, tmp_path)
    assert v["verdict"]["category"] == "unknown" and v["verdict"]["cause"] == "unknown"
    assert any("dmesg" in c for c in v["verdict"]["collect"])


def test_eval_summary_line(tmp_path):
    r = run_cli("eval", str(CORPUS))
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("category: ") and "/20 correct (" in last


def test_eval_json(tmp_path):
    r = run_cli("eval", str(CORPUS), "--json", "-")
    data = json.loads(r.stdout)
    assert data["total"] == 20 and len(data["cases"]) == 20
    assert {"case", "expected_category", "category", "cause", "confidence"} <= set(data["cases"][0])


def test_explain_and_rules():
    r = run_cli("explain", "shm_exhausted")
    assert r.returncode == 0 and "--shm-size" in r.stdout
    assert run_cli("explain", "no_such_cause").returncode == 2
    r = run_cli("explain", "xid:79")
    assert "fallen off the bus" in r.stdout.lower()
    r = run_cli("rules")
    assert r.returncode == 0 and "message patterns" in r.stdout


def test_rules_file_validation(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[[message]]\nid = "my_site_oom"\nkeywords = ["slurmstepd"]\npattern = "Detected \\\\d+ oom_kill event"\n'
                    'severity = "error"\ncause = "host_oom"\nweight = 0.8\nrole = "root"\n'
                    'sample = "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0"\nsource = "site"\n')
    bad = tmp_path / "bad.toml"
    bad.write_text('[[message]]\nid = "x"\nkeywords = ["a"]\npattern = "("\nseverity = "error"\nrole = "root"\nsample = "a"\nsource = "s"\n')
    r = run_cli("rules", str(good))
    # a rule file without strengths (written before they existed) keeps claiming, and is told how it is read
    assert r.returncode == 0 and "gives no strength: read as strong from its weight 0.80" in r.stdout
    r = run_cli("rules", str(bad))
    assert r.returncode == 2 and "does not compile" in r.stdout
    # a user rule changes a verdict
    b = tmp_path / "b"
    b.mkdir()
    (b / "slurm.log").write_text("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0\n")
    v = analyze_json(b, tmp_path, "--rules", str(good))
    assert v["verdict"]["cause"] == "host_oom"


def test_internal_error_is_one_line(tmp_path, monkeypatch):
    from postmortem import cli

    def boom(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(cli, "_analyze", boom)
    import contextlib
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["analyze", str(CORPUS / "ecc-uncorrectable-01/bundle"), "--html", "-"])
    assert code == 1 and "kaput" in err.getvalue() and "Traceback" not in err.getvalue()
