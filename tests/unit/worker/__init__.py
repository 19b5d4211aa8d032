"""Tests of the worker's edges and kit (no broker)."""
