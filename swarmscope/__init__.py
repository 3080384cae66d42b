"""Swarmscope's library: orchestration traces, their importers, graph metrics, interventions, credit
assignment, the LLM-judge baselines and the live protocol. Standard library, numpy and networkx only
(no Django, Channels, Celery or torch; tests/swarmscope/test_purity.py), usable in a notebook:

    >>> import swarmscope
    >>> (trace,) = swarmscope.read_traces("run.jsonl")
    >>> swarmscope.compute_metrics(trace)["critical_steps"]

Layers and what each module owns: docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it, loaded on first use (PEP 562): `import swarmscope.client`
#: then needs the standard library alone.
_PUBLIC = {
    "swarmscope.model": [
        "Agent",
        "Edge",
        "Event",
        "Label",
        "Trace",
        "TraceValidationError",
        "trace_from_dict",
        "validate_trace",
    ],
    "swarmscope.importers": ["ImportResult", "SourceFile", "TraceFormatError", "read_files"],
    "swarmscope.importers.files": ["iter_files", "read_traces"],
    "swarmscope.graph": ["causal_dag", "spawn_tree"],
    "swarmscope.metrics": ["compute_metrics", "critical_path"],
    "swarmscope.interventions": ["Intervention", "InterventionError", "check_intervention"],
    "swarmscope.credit": ["Attribution", "coalition_game", "kernel_shap", "leave_one_out", "shapley_permutation"],
    # The REST client (the swarmscope-client distribution, re-exported): standard library only.
    "swarmscope.client": ["Client", "SwarmscopeError"],
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'swarmscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
