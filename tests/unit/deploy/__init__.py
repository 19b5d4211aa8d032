"""Tests of the schemas, monitoring rules and test corpora."""
