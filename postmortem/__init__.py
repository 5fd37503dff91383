"""postmortem: post-mortem crash and log analyzer for multi-GPU training failures."""

__version__ = "0.1.0"

# One bundle's wall-time budget, the default of `analyze --time-limit` and `triage --time-limit`:
# at it, reading stops and the verdict is made from what was read (Analysis.limits says so).
# Here rather than in budget.py so that `postmortem --help` imports no dataclasses (startup time).
DEFAULT_SECONDS = 60.0
