"""Where the repository is, for tests that read its examples, schemas and configs."""

from __future__ import annotations

from pathlib import Path

#: the repository root
REPO = Path(__file__).resolve().parents[2]
#: The bundled example policy (the README's).
EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"
