"""Swarmscope's library: orchestration traces, their importers, graph metrics, interventions, credit
assignment, the LLM-judge baselines and the live protocol. Standard library, numpy and networkx only
(no Django, Channels, Celery or torch; tests/swarmscope/test_purity.py), usable in a notebook:

    >>> import swarmscope
    >>> (trace,) = swarmscope.read_traces("run.jsonl")
    >>> swarmscope.compute_metrics(trace)["critical_steps"]

Layers and what each module owns: docs/architecture.md.
"""

from swarmscope.credit import Attribution, coalition_game, kernel_shap, leave_one_out, shapley_permutation
from swarmscope.graph import causal_dag, spawn_tree
from swarmscope.importers import ImportResult, SourceFile, TraceFormatError, read_files
from swarmscope.importers.files import iter_files, read_traces
from swarmscope.interventions import Intervention, InterventionError, check_intervention
from swarmscope.metrics import compute_metrics, critical_path
from swarmscope.model import Agent, Edge, Event, Label, Trace, TraceValidationError, trace_from_dict, validate_trace

__all__ = [
    "Agent", "Attribution", "Edge", "Event", "ImportResult", "Intervention", "InterventionError", "Label",
    "SourceFile", "Trace", "TraceFormatError", "TraceValidationError", "causal_dag", "check_intervention",
    "coalition_game", "compute_metrics", "critical_path", "iter_files", "kernel_shap", "leave_one_out",
    "read_files", "read_traces", "shapley_permutation", "spawn_tree", "trace_from_dict", "validate_trace",
]
