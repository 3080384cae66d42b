"""The pure domain kernel: trace model, importers, metrics, live-delta protocol.

Standard library, numpy and networkx only: no Django, Channels, Celery or torch (checked by
import-linter and tests/swarmscope/test_purity.py).
"""
