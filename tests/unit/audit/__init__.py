"""Tests of the offline audit: resolve, replay, explain."""
