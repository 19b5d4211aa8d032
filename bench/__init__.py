"""Benchmarks of claimwatch (`make bench`): speed as ratios against baselines run alongside."""
