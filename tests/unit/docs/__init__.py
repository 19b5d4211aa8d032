"""Tests of the documentation: its code runs, its references are generated."""
