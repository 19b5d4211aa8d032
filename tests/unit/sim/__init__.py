"""Tests of the simulator (streams/claimwatch/sim)."""
