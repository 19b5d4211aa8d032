"""Generate the JSON Schema files in schemas/json from the pydantic models (`make schemas`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from schemas.alert import AlertRecord
from schemas.claim import ClaimEnvelope
from schemas.decision import DecisionRecord
from schemas.plan import PlanRecord, StepStatusRecord
from schemas.policy import Policy
from schemas.publish import PublishRequest, PublishResult
from schemas.verdict import VerdictDecision, VerdictSignal

OUT_DIR: Final = Path(__file__).parent / "json"
MODELS: Final[dict[str, type[BaseModel]]] = {
    "claim": ClaimEnvelope,
    "policy": Policy,
    "decision": DecisionRecord,
    "alert": AlertRecord,
    "verdict_signal": VerdictSignal,
    "verdict_decision": VerdictDecision,
    "plan": PlanRecord,
    "plan_step_status": StepStatusRecord,
    "publish_request": PublishRequest,
    "publish_result": PublishResult,
}


def render(model: type[BaseModel]) -> str:
    """The JSON Schema of a model, as the checked-in file holds it."""
    schema = model.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_files() -> dict[Path, str]:
    """Every schema file and the text it should have."""
    return {OUT_DIR / f"{name}.schema.json": render(model) for name, model in MODELS.items()}


def main() -> int:
    """Write the files; print which ones changed."""
    OUT_DIR.mkdir(exist_ok=True)
    for path, text in expected_files().items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
