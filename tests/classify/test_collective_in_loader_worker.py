"""A torch.distributed collective called inside a DataLoader worker process (torch/utils/data/_utils/
worker.py _worker_loop runs the Dataset in a forked child, no rank of the group) is the job's dataset
code: its collective pairs with nothing.  Real py-spy dumps: fixtures/lab/output/lab-collective-in-worker,
made by fixtures/lab/collective_in_worker/make.sh (near miss slow: workers only slow in __getitem__),
and the lab case that motivated it (validation31 lab13 lazy global token stats)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LAB = FIX / "lab/output/lab-collective-in-worker"
LAZY = FIX / "validation31/lab-f/lab13-dataset-lazy-global-token-stats-all-reduce-inside-forked-loader-worker-hang/bundle"



def test_workers_in_a_collective_are_the_jobs_dataset_code():
    v = analyze(LAB / "collective/bundle").verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert "ShardDataset.__getitem__" in v.summary and "all_reduce" in v.summary, v.summary


def test_workers_only_slow_in_getitem_give_no_such_reading():
    v = analyze(LAB / "slow/bundle").verdict
    assert v.cause != "app_error", v.trace
    assert not any(t.startswith("collective-in-loader-worker") for t in v.trace), v.trace


def test_the_lab_job_whose_dataset_all_reduced_in_its_workers():
    v = analyze(LAZY).verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert "loader_train.py:37" in v.summary, v.summary


def test_a_worker_only_asking_its_rank_is_no_collective_in_a_worker():
    # get_rank() lives in distributed_c10d.py too, but communicates nothing: the spawn-started worker
    # raises for want of a process group, the job's error, not a collective that pairs with nothing
    v = analyze(LAB / "getrank/bundle").verdict
    assert not any(t.startswith("collective-in-loader-worker") for t in v.trace), v.trace
