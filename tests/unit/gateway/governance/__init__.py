"""Tests of the gateway's governance stage: checks, OPA, the policy, the decision."""
