"""The knowledge files: content, not just shape (siggen's lesson)."""
from importlib import resources

import pytest

from postmortem import knowledge
from postmortem.parsers import parse_text

K = knowledge.load()


def test_every_file_in_the_knowledge_folder_is_loaded():
    folder = resources.files("postmortem.knowledge")
    data_files = {p.name for p in folder.iterdir() if p.name.endswith(".toml")}
    assert data_files == {"causes.toml", "xid.toml", "messages.toml", "signals.toml"}


def test_required_cause_ids_exist_with_category():
    required = {
        "config": "shm_exhausted shm_permissions gpu_oom host_oom pinned_memory fd_limit memlock_limit device_mapping "
                  "straggler_timeout dataloader_worker_crash nccl_version_old",
        "comms": "nccl_p2p nccl_network nccl_timeout nccl_version_mismatch nvls_fabric",
        "hardware": "gpu_fell_off_bus gpu_memory_ecc nvlink_fault gsp_fault pcie_error gpu_thermal_power "
                    "host_memory_error driver_bug gpu_hardware_other",
    }
    for category, ids in required.items():
        for cid in ids.split():
            assert K.causes[cid].category == category, cid
    assert K.causes["unknown"].category == "unknown"


@pytest.mark.parametrize("cause", sorted(K.causes))
def test_each_cause_has_fix_next_steps_and_source(cause):
    c = K.causes[cause]
    assert c.remediation and c.next_steps and c.source and len(c.explanation) > 40


@pytest.mark.parametrize("m", K.messages, ids=lambda m: m.id)
def test_each_message_pattern_fires_on_its_real_sample_through_the_parser(m):
    """The sample goes through the real line dispatcher (wrappers stripped) and yields msg.<id>."""
    result = parse_text("sample.log", [m.sample + "\n"])
    kinds = [e.kind for e in result.sink.events if e.kind.startswith("msg.")]
    assert f"msg.{m.id}" in kinds, (m.id, kinds)


@pytest.mark.parametrize("m", [m for m in K.messages if m.cause not in ("", "xid")], ids=lambda m: m.id)
def test_causal_patterns_name_known_causes_with_weight(m):
    assert m.cause in K.causes and 0 < m.weight < 1


def test_xid_catalog_matches_formats_reference():
    # Spot checks against docs/formats.md §2.5.
    assert K.xids[79].cause == "gpu_fell_off_bus" and K.xids[79].immediate == "RESTART_BM"
    assert K.xids[48].cause == "gpu_memory_ecc"
    assert K.xids[119].cause == "gsp_fault" and K.xids[120].cause == "gsp_fault"
    assert K.xids[74].cause == "nvlink_fault"
    for consequence in (43, 45, 154):
        assert K.xids[consequence].role == "consequence" and K.xids[consequence].cause == ""
    assert K.xids[13].cause == "app_fault"


def test_bad_rules_are_rejected_with_file_and_entry(tmp_path):
    bad = tmp_path / "r.toml"
    bad.write_text('[[message]]\nid = "x"\nkeywords = ["zzz"]\npattern = "zzz"\nseverity = "error"\ncause = "no_such"\n'
                   'weight = 0.5\nrole = "root"\nsample = "zzz"\nsource = "t"\n')
    with pytest.raises(knowledge.KnowledgeError, match="unknown cause 'no_such'"):
        knowledge.load((bad,))
    bad.write_text('[[message]]\nid = "x"\nkeywords = ["zzz"]\npattern = "yyy"\nseverity = "error"\ncause = ""\n'
                   'weight = 0.5\nrole = "root"\nsample = "zzz"\nsource = "t"\n')
    with pytest.raises(knowledge.KnowledgeError, match="does not match its own sample"):
        knowledge.load((bad,))


def test_user_rules_can_add_causes_and_xids(tmp_path):
    f = tmp_path / "site.toml"
    f.write_text('[causes.site_psu]\ncategory = "hardware"\ntitle = "PSU"\nexplanation = "' + "x" * 50 + '"\n'
                 'remediation = ["swap PSU"]\nnext_steps = ["ipmitool sdr"]\nsource = "site"\n'
                 '[xid.999]\nname = "SITE"\nmeaning = "m"\ncause = "site_psu"\nweight = 0.9\nrole = "root"\n')
    k = knowledge.load((f,))
    assert k.causes["site_psu"].category == "hardware" and k.xids[999].cause == "site_psu"
