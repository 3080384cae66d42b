"""Stored orchestration traces: models, services (all writes), REST API, OTLP, pages."""
