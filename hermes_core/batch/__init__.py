"""Batch trajectories: a dataset of prompts, each run through the reference agent in a fresh
session with the enabled plugins' tools and hooks, the results kept as training and evaluation data.

`hermes batch run DATASET.jsonl --out DIR` is the command (docs/batch.md); `run_batch` is the same
for a host's own code. Built on hermes-core's public names and the reference agent only.
"""

from .dataset import Item, read_dataset
from .output import BatchBusyError, OutputDir
from .runner import BatchOptions, Statistics, run_batch
from .trajectory import sharegpt, tool_stats

__all__ = ["BatchBusyError", "BatchOptions", "Item", "OutputDir", "Statistics", "read_dataset", "run_batch",
           "sharegpt", "tool_stats"]
