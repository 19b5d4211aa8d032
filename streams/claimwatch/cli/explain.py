"""`claimwatch explain DECISION_ID`: a decision in plain language, from its record.

A fact's decision (`dec_...`) is read from the decisions topic; a verdict (`vrd_...`) from
the verdicts' decisions topic. A record from `--from` that names a request (`request_id`)
is rendered as a verdict (`claimwatch.audit.explain_verdict`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Final

import typer
from aiokafka.errors import KafkaConnectionError

from claimwatch.audit.explain import explain as render
from claimwatch.audit.explain_verdict import explain_verdict, is_verdict
from claimwatch.audit.recorded import decision_lines, recorded_decisions
from claimwatch.cli.common import BootstrapOption, PrefixOption, fail
from claimwatch.cli.topics import prefix_or_env, topic_named
from claimwatch.wire.topics import TopicNames, broker_unavailable

#: How a verdict's decision id begins (`claimwatch.core.argue.records`).
VERDICT_ID: Final = "vrd_"


def explain(
    decision_id: Annotated[
        str, typer.Argument(help="the decision_id to explain (a verdict's starts with vrd_)")
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="decisions JSON-lines FILE, or TOPIC (`decisions`: the prefix's decisions"
            " topic; default: that topic, or stdin when piped; for a vrd_ id the prefix's"
            " verdicts.decisions topic)",
        ),
    ] = None,
    bootstrap: BootstrapOption = None,
    topic_prefix: PrefixOption = None,
) -> None:
    """Render a decision in plain language from its record."""
    prefix = prefix_or_env(topic_prefix)
    names = TopicNames(prefix)
    verdict = decision_id.startswith(VERDICT_ID)
    where = (names.verdicts_decisions if verdict else names.decisions) if source is None else source
    if source is not None and not Path(source).exists():
        where = topic_named(source, prefix)
    # a verdict id without --from always reads its topic (stdin is for fact decisions)
    piped = source is None and not verdict and not sys.stdin.isatty()
    require = ("decision_id", "request_id") if verdict and source is None else ()
    try:
        if piped:
            records = decision_lines(sys.stdin.buffer, "<stdin>")
        else:
            records = list(recorded_decisions(where, bootstrap, require=require))
    except KafkaConnectionError:
        fail(str(broker_unavailable(bootstrap)), 1)
    except RuntimeError as exc:  # a line that is not a decision: FILE:LINE: reason
        fail(str(exc), 1)
    found = next((r for r in records if r.get("decision_id") == decision_id), None)
    if found is None:
        fail(f"no decision {decision_id} in {'stdin' if piped else where}", 1)
    try:
        text = explain_verdict(found) if is_verdict(found) else render(found)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        message = f"decision {decision_id} is not a complete decision record ({reason})"
        fail(message, 1)
    typer.echo(text)
