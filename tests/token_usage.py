"""The measured token usage of each file of ../shared/data, summed by hand from the raw records,
without the importers: what every token total (library, list, trace page, API, metrics) must equal
(docs/metrics.md "Tokens").

Rules, per format, as each source counts its usage:

- Langfuse exports: the total Langfuse shows for each GENERATION / EMBEDDING observation
  (`usageDetails.total`, else the sum of its usage types), for the calls that wrap no other
  generation (agno's `OpenAIChat.invoke` wraps the `chat gpt-4o-mini` generation of the same call:
  one call, counted once, by the innermost record); AGENT observations' usage is not counted.
- OpenTelemetry (Jaeger tags, Monocle `metadata` span events): each span's reported total, else
  input + output.
- Codex CLI: the last `token_count` event's `total_token_usage.total_tokens`.
- Claude Code: per API call (a message id of a lane), its last `usage`: input + cache creation +
  cache read + output tokens; a subagent's calls from its own transcript, else from the parent's
  `agent_progress` copies.
- Survey schema: `costs.tokens` as the trace gives it.
- Who&When and MAST report no usage: None (their figures are estimates).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: `(label, files imported together, measured tokens by hand or None for none measured)`.
Group = tuple[str, list[Path], int | None]

CLAUDE_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
#: The cut-off Monocle chunk (bad input on purpose: ../shared/data/README.md).
HANDOFF_CUT = "2026-06-11_15.01.07"


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def langfuse_observation_total(details: dict[str, Any]) -> int | None:
    """Langfuse's total of one observation: `total`, else every usage type summed."""
    if _count(details.get("total")) is not None:
        return _count(details["total"])
    counts = [n for value in details.values() if (n := _count(value)) is not None]
    return sum(counts) if counts else None


def langfuse_call_totals(path: Path) -> list[int]:
    """Langfuse's total of each model call of an export (innermost generations with usage)."""
    doc = json.loads(path.read_text())
    observations = {o["id"]: o for o in [*doc["trace"].get("observations", []), *doc["observations"]]}
    calls = {
        oid: total
        for oid, o in observations.items()
        if o["type"] in ("GENERATION", "EMBEDDING")
        and (total := langfuse_observation_total(o.get("usageDetails") or {})) is not None
    }
    wrapping = set()
    for oid in calls:
        parent = observations[oid].get("parentObservationId")
        while parent:
            wrapping.add(parent)
            parent = observations.get(parent, {}).get("parentObservationId")
    return sorted(total for oid, total in calls.items() if oid not in wrapping)


def _span_usage(attributes: dict[str, Any]) -> int | None:
    total = next(
        (_count(attributes[k]) for k in ("gen_ai.usage.total_tokens", "total_tokens") if k in attributes), None
    )
    if total is not None:
        return total
    parts = [
        _count(attributes.get(k))
        for k in ("gen_ai.usage.input_tokens", "prompt_tokens", "gen_ai.usage.output_tokens", "completion_tokens")
    ]
    return sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None


def jaeger_tokens(path: Path) -> int:
    doc = json.loads(path.read_text())
    usages = [
        _span_usage({tag["key"]: tag["value"] for tag in span["tags"]}) for t in doc["data"] for span in t["spans"]
    ]
    return sum(u for u in usages if u is not None)


def monocle_tokens(paths: list[Path]) -> int:
    usages = [
        _span_usage(event["attributes"])
        for path in paths
        for span in json.loads(path.read_text())
        for event in span.get("events", [])
        if event["name"] == "metadata"
    ]
    return sum(u for u in usages if u is not None)


def codex_tokens(path: Path) -> int:
    last = None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "event_msg" and record["payload"].get("type") == "token_count":
            last = record["payload"]["info"]["total_token_usage"]["total_tokens"]
    assert last is not None, path
    return last


def claude_code_tokens(session: Path) -> int:
    subagents = sorted(session.with_suffix("").rglob("*.jsonl")) if session.with_suffix("").is_dir() else []
    own_file = {p.stem.removeprefix("agent-") for p in subagents}
    calls: dict[tuple[str, str], int] = {}
    for path in [session, *subagents]:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            data = record.get("data") or {}
            if record.get("type") == "assistant":
                lane, message = str(path), record["message"]
            elif (
                record.get("type") == "progress"
                and data.get("type") == "agent_progress"
                and (data.get("message") or {}).get("type") == "assistant"
                and data.get("agentId") not in own_file
            ):
                lane, message = data["agentId"], data["message"]["message"]
            else:
                continue
            usage = message.get("usage")
            if isinstance(usage, dict):
                calls[(lane, message.get("id"))] = sum(usage.get(k) or 0 for k in CLAUDE_USAGE)
    return sum(calls.values())


def shared_groups(shared: Path) -> list[Group]:
    """Every trace file (group) of ../shared/data with its measured usage by hand."""
    groups: list[Group] = []
    for path in sorted((shared / "langfuse-exports").glob("*.json")):
        groups.append((path.name, [path], sum(langfuse_call_totals(path))))
    for path in sorted((shared / "otel-agntcy-a2a").glob("*.json")):
        groups.append((path.name, [path], jaeger_tokens(path)))
    monocle = sorted((shared / "otel-monocle-agent-framework").glob("*.json"))
    for path in monocle:
        if "handoff" not in path.name:
            groups.append((path.name, [path], monocle_tokens([path])))
    handoff = [p for p in monocle if "handoff" in p.name and HANDOFF_CUT not in p.name]
    groups.append(("monocle handoff (2 valid chunks)", handoff, monocle_tokens(handoff)))
    for path in sorted((shared / "codex-cli").glob("*.jsonl")):
        groups.append((path.name, [path], codex_tokens(path)))
    for session in sorted((shared / "claude-code").glob("*.jsonl")):
        folder = session.with_suffix("")
        files = [session, *sorted(folder.rglob("*.jsonl"))] if folder.is_dir() else [session]
        groups.append((session.name, files, claude_code_tokens(session)))
    for path in sorted((shared / "survey-trace-schema").glob("*.json")):
        if path.name != "trace_schema.json":
            groups.append((path.name, [path], json.loads(path.read_text())["costs"]["tokens"]))
    for path in sorted((shared / "who-and-when").rglob("*.json")):
        groups.append((f"who-and-when/{path.parent.name}/{path.name}", [path], None))
    groups.append(("mast (19 traces)", [shared / "mast" / "MAD_human_labelled_dataset.json"], None))
    return groups
