"""Tests of the trainer package (CPU only)."""
