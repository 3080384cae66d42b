"""Claude Code session transcripts: `~/.claude/projects/<project>/<session>.jsonl` with the subagent
transcripts in `<session>/subagents/agent-<agentId>.jsonl` (`agent-acompact-*`: context compaction).

The format is undocumented by Anthropic; this follows the files themselves (../shared/data/README.md,
"Claude Code transcripts"; github.com/marot/spotter `test/fixtures/transcripts/`). One JSON record
a line: `{type: user | assistant | system | progress | summary | ..., uuid, parentUuid, sessionId,
timestamp (ISO 8601), isSidechain, agentId?, message: {role, content: str | [part], id?, model?,
usage?}}`; parts are `text`, `thinking`, `tool_use {id, name, input}`, `tool_result {tool_use_id,
content, is_error}`. An assistant reply is streamed as one record per part sharing `message.id`,
each with the usage so far: the last record's `usage` is the call's.

Every record carries the session's `sessionId` (subagent files too): `split` keys records by it,
so a session file and its subagent files, in any order, become one trace (`read_files` merges).
The mapping (times in seconds from the session's first record):

- lanes: `main` (the lead), `user` (the human: the first prompt a `message`, later ones
  `human_intervention`), one per subagent named `<name or subagent_type>:<agentId>`;
- `Task` / `Agent` tool_use: `spawn` + `delegate` (content: the prompt; `subagent_type`,
  `description` in attributes); the subagent's records in its lane, from its file, else from
  the inline sidechain (`isSidechain: true` in the session file, older versions), else from the
  parent's `agent_progress` records; its answer (the `tool_result`) a `return` at the result's
  time. Several delegations in one assistant message are parallel: the lead's next event is an
  `aggregate` (a separate one when that event is no `message`);
- compaction subagents: role `compaction`, a `spawn` (attribute `compaction`), no delegation, the
  summary a `return` (with the `compact_boundary` metadata);
- `SendMessage` (agent teams): a `message` from its sender to the named peer (name, agentId or
  `team-lead`); a teammate's spawn (`team_name` in the input) is answered by a `tool_result`, not
  a `return`, and `<teammate-message>` user texts are not human turns;
- other tool_use / tool_result: `tool_call` / `tool_result` with a `tool_dependency` edge;
- `text` and `thinking` parts: `message` events (attribute `part`); one event per API call holds
  its tokens = input + output + cache read + cache creation (each kept as an attribute);
- every event made from one assistant message (its blocks, spawns and delegations) carries the
  API message id as `response_id` (GenAI's `gen_ai.response.id`), and a subagent's `return` the
  id of the subagent's last response before it: one model response is one execution step
  (`swarmscope.graph` "Execution steps").

Edges: `spawn` and `message` into the receiver's next event, `return` to the delegator's next
event, `aggregate` from each parallel return, `tool_dependency`. Costs: `tokens` and the four usage
counts, `llm_calls`, `tool_calls`, `wall_clock_s`. Attributes: `session_id`, `question` (the
first prompt), `sources`, `cwd`, `version`, `models`. Bad input raises TraceValidationError
naming the line (counting non-blank lines) and the field; the file then imports nothing.

Modules: `records` (line checks, times, content), `lanes` (lanes and delegations), `build`
(events, edges, agents, costs).
"""

from __future__ import annotations

from typing import Any

from swarmscope.model import Trace

from .build import build_trace
from .records import Item, check, is_message_record

FORMAT = "claude_code"


def sniff(doc: Any) -> bool:
    """A JSON Lines file (or one record) holding at least one Claude Code user/assistant record."""
    records = doc if isinstance(doc, list) else [doc]
    return any(is_message_record(record) for record in records)


def split(doc: Any) -> dict[str, list[Item]]:
    """sessionId -> the file's `(line, record)` items of that session; records without a
    sessionId (file-history snapshots, summaries) go to the file's first session. Raises
    TraceValidationError naming the line (1-based, among non-blank lines) and field."""
    records = doc if isinstance(doc, list) else [doc]
    for line, record in enumerate(records, start=1):
        check(record, line)
    first = next(r["sessionId"] for r in records if isinstance(r.get("sessionId"), str))
    chunks: dict[str, list[Item]] = {}
    for line, record in enumerate(records, start=1):
        chunks.setdefault(record.get("sessionId") or first, []).append((line, record))
    return chunks


def build(session_id: str, items: list[Item], sources: list[str]) -> Trace:
    """One trace of a session from the `split` items of its files (any order, chunks merged)."""
    return build_trace(FORMAT, session_id, [record for _, record in items], sources)
