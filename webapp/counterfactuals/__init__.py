"""Counterfactual jobs and the attributions they produce: models, services, tasks, API."""
