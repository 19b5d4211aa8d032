"""Tests of claimwatch."""
