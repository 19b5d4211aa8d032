"""Conflict-spike and replica-lag detectors over the decision stream."""
