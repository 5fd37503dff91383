"""Running analyze_one over many bundles: a local process pool, or a Dask cluster.

Both yield BundleResults as they finish; a worker that dies or a future that fails
becomes an error result for its bundle, never an exception for the batch.
"""
from __future__ import annotations

import sys
import itertools
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator

from postmortem.triage.discover import Task
from postmortem.triage.work import BundleResult, Settings, analyze_one, error_result

DASK_CONNECT_TIMEOUT = "15s"
IN_FLIGHT_PER_JOB = 2   # tasks submitted ahead per worker: enough to keep workers busy
DASK_RETRIES = 2      # a worker lost mid-task (restarted nanny) should not cost its bundles


class ClusterError(RuntimeError):
    """The Dask scheduler cannot be reached, or dask is not installed."""


def run_local(tasks: list[Task], settings: Settings, jobs: int) -> Iterator[BundleResult]:
    if jobs <= 1 or len(tasks) <= 1:   # no pool: simplest to debug, nothing to gain
        for task in tasks:
            yield analyze_one(task, settings)
        return
    # A bounded window of submitted tasks, each future dropped once its result is handed on:
    # the parent's memory stays flat however many bundles the batch holds.
    window = jobs * IN_FLIGHT_PER_JOB
    pending: dict = {}
    queue = iter(tasks)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for task in itertools.islice(queue, window):
            pending[pool.submit(analyze_one, task, settings)] = task
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                result = _result(future, task)
                del future
                for nxt in itertools.islice(queue, 1):
                    pending[pool.submit(analyze_one, nxt, settings)] = nxt
                yield result


def run_dask(tasks: list[Task], settings: Settings, address: str) -> Iterator[BundleResult]:
    """The same work on an existing cluster; bundle paths must be readable by the workers."""
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError as exc:
        raise ClusterError("--dask needs the dask extra: pip install 'postmortem[dask]'") from exc
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        futures = {client.submit(analyze_one, task, settings, pure=False, retries=DASK_RETRIES): task for task in tasks}
        for future in dask_completed(list(futures)):
            yield _result(future, futures.pop(future))   # dropped once handed on
    finally:
        client.close()


def _result(future, task: Task) -> BundleResult:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - a dead worker costs one bundle, not the batch
        return error_result(task, exc)


@contextmanager
def progress_bar(total: int, enabled: bool) -> Iterator[Callable[[BundleResult], None]]:
    """A rich progress bar on stderr; a no-op when disabled (-q, or stderr is not a terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda result: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("triage"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as bar:
        job = bar.add_task("", total=total)
        yield lambda result: bar.update(job, advance=1, description=result.name[:40])
