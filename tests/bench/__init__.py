"""Tests of the benchmarks' own parts (the baselines must do the work they stand for)."""
