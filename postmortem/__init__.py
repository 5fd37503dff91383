"""postmortem: post-mortem crash and log analyzer for multi-GPU training failures."""

__version__ = "0.1.0"
