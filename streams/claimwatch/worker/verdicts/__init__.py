"""Verdict requests answered by argumentation over the live signals."""
