"""Tests of the simulator (streams/sim)."""
