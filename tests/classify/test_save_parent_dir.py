"""torch.save into a directory that is not there (caffe2/serialize/inline_container.cc,
PyTorchStreamWriter: "Parent directory {} does not exist."): the job's checkpoint path, not a
storage fault.  Lines from fixtures/lab/torch_save_lines.sh (torch 2.13.0 CPU)."""
from __future__ import annotations

from pathlib import Path

from postmortem.knowledge import catalog
from postmortem.run import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SAVE_LINES = FIXTURES / "lab/output/lab-torch-save-lines/lines.txt"
# validation27 (development half of the ninth sweep): a shared checkpoint volume mounted on node 0
# only; rank 1's torch.save fails, rank 0's gloo "Connection closed by peer" follows.
CKPT_ROOT_LOCAL = FIXTURES / "validation27/lab-b/lab9-node1-ckpt-root-local-not-shared-sharded-save/bundle"


def test_save_into_a_missing_directory_is_read_as_the_jobs_checkpoint_path():
    save_line, load_line = SAVE_LINES.read_text().splitlines()[:2]
    read = catalog.match_message(save_line, ("pytorch",))
    assert read is not None and read.entry.id == "pt.save_parent_dir_missing" and read.cause == "app_error"
    # near miss: torch.load of a file that is not there fails in Python's open(), another reading
    miss = catalog.match_message(load_line, ("pytorch",))
    assert miss is None or miss.entry.id != "pt.save_parent_dir_missing"


def test_rank_whose_save_found_no_directory_is_the_root_and_the_peers_error_its_fallout():
    v = analyze(CKPT_ROOT_LOCAL).verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert any(r.path.endswith("node1.log") for r in v.root.evidence), v.root.evidence
