"""Tests of the policy file."""
