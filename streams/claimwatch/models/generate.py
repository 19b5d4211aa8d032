"""Write the JSON Schema files of the pydantic models (`make schemas` writes them to schemas/)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from claimwatch.models.alert import AlertRecord
from claimwatch.models.claim import ClaimEnvelope
from claimwatch.models.decision import DecisionRecord
from claimwatch.models.plan import PlanRecord, StepStatusRecord
from claimwatch.models.policy import Policy
from claimwatch.models.publish import PublishRequest, PublishResult
from claimwatch.models.verdict import VerdictDecision, VerdictSignal

#: Where `make schemas` writes them, from the repository root.
OUT_DIR: Final = Path("schemas")
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


def expected_files(out_dir: Path = OUT_DIR) -> dict[Path, str]:
    """Every schema file in `out_dir` and the text it should have."""
    return {out_dir / f"{name}.schema.json": render(model) for name, model in MODELS.items()}


def main(argv: list[str] | None = None) -> int:
    """Write the files to the directory given (default schemas/); print which ones changed."""
    args = sys.argv[1:] if argv is None else argv
    out_dir = Path(args[0]) if args else OUT_DIR
    out_dir.mkdir(exist_ok=True)
    for path, text in expected_files(out_dir).items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
