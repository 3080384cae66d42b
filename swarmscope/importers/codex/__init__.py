"""OpenAI Codex CLI session rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Source: the rollout line and protocol types of github.com/openai/codex, read at
`codex-rs/protocol/src/protocol.rs` (`RolloutLine`, `RolloutItem`, `SessionMeta`, `SessionSource`,
`SubAgentSource::ThreadSpawn`, `TokenCountEvent`, `TaskCompleteEvent`; commit edb4efee49ae),
`codex-rs/protocol/src/models.rs` (`ResponseItem`), and the multi-agent tool handlers
`codex-rs/core/src/tools/handlers/multi_agents/{spawn,send_input,wait,close_agent}.rs`
(commits 04a51a35429, 015297c50df, 1f1bd303eeb, 0ae308399d7). One JSON record per line:

    {timestamp: ISO 8601, type: session_meta | turn_context | response_item | event_msg | compacted,
     payload: {...}}

- `session_meta` (first line): `id` (the thread id), `timestamp`, `cwd`, `originator`,
  `cli_version`, `model_provider`, `base_instructions.text`, and `source`: "cli", "exec", ... or,
  for a sub-agent, `{"subagent": {"thread_spawn": {parent_thread_id, depth, agent_nickname?,
  agent_role?, agent_path?}}}`;
- `turn_context`: the turn's `model`, `cwd`, policies; `event_msg` `task_started` /
  `task_complete` (`last_agent_message`, `duration_ms`) / `turn_aborted` bound a turn;
- `response_item`: `message` (role, content parts with `text`), `reasoning` (`summary`),
  `function_call` (name, `arguments` as JSON text, call_id) and `function_call_output` (call_id,
  output: text, content items or `{content, success}`), `custom_tool_call(_output)`,
  `local_shell_call`, `web_search_call`;
- `event_msg` `token_count`: `info.total_token_usage` (cumulative per thread) and
  `info.last_token_usage`, each `{input_tokens, cached_input_tokens, output_tokens,
  reasoning_output_tokens, total_tokens}` (input includes cached input).

Mapping, one trace per ROOT thread: `split` keys a file by its thread id, `group` maps every thread
to the root it descends from through `parent_thread_id` (children, grandchildren, in any date
folder), `build` makes one trace of a root and its descendants. A thread is a lane: the root agent
is "codex", a child is named by its nickname, else its role, else its thread id ("#2" added where
two would share a name). Events, `t` in seconds from the earliest record:

- `message`: assistant turns (`role` "assistant"); the user's prompts as agent "user" (a
  `human_intervention` once the thread's agent has answered); developer/system messages and
  harness context (`<environment_context>`, `<user_instructions>`, AGENTS.md ...) in the thread's
  lane with `role` and `attributes.context`;
- `spawn_agent` → `spawn` + `delegate` (the `message` as content) to the child; `send_input` →
  `delegate` to a child, else `message`; `wait` / `wait_agent` → `aggregate` at the time its output
  came back, with a `return` edge from each waited-on agent's last answer before it (that answer
  becomes a `return` event); `close_agent` → `despawn` and the child's `Agent.despawned_at`;
- other function, custom and shell calls → `tool_call` / `tool_result` with a `tool_dependency`
  edge; reasoning summaries go to the next model output's `attributes.reasoning`;
- `task_complete` / `turn_aborted` → `stop` (attribute `harness`: the harness ends the turn, the
  model's answer is its message, so it is no step of its own); the events of one model response
  (its message and calls, up to the thread's next `token_count`) share a `response_id`
  (`<thread id>:<n>`: one execution step, `swarmscope.graph`); `token_count` → the increase of the thread's
  `total_token_usage` on the last model output before it (`tokens` = input + output, the four
  counts in attributes; repeated counts add nothing); trace `costs` sum each thread's last total.

Edges: `spawn` to the child's first event, `message` from a delegate to the child's event after the
delivered input (the n-th non-context user message of a child is the n-th delegation to it) and
from a user prompt to the agent's next event, `return`, `tool_dependency`; only forward edges are
kept. A child's inputs beyond the delegations to it are messages from the user (typed into its
thread). `user_message` / `agent_message` events repeat response items and are not read twice;
`collab_agent_spawn_end` events (kept by the extended persistence mode) name a child when the
spawn output does not, else unclaimed children match a parent's spawns in order of start.

A child whose parent rollout is not imported becomes its own trace, its inputs as messages from an
agent named by the parent's thread id, with a `notes` attribute saying so; `session_id` is then the
parent's id at depth 1 (the root) and its own id deeper. Identity: `codex:<root thread id>`;
`attributes.session_id` is the root thread id. Errors name the line (non-blank lines counted, as
the decoder gives them) and field; a file with any bad line imports nothing.

Modules: `records` (line checks, `Rollout`, content readers), `threads` (names and events of each
thread), `build` (multi-agent structure, edges, agents, costs).
"""

from __future__ import annotations

from typing import Any

from swarmscope.model import Trace

from .build import build_trace
from .records import Rollout, read_rollout, records_of

FORMAT = "codex"


def sniff(doc: Any) -> bool:
    """A rollout: its first record is a `session_meta` whose payload has a string `id`."""
    records = records_of(doc)
    first = records[0] if records else None
    return (
        isinstance(first, dict)
        and first.get("type") == "session_meta"
        and isinstance(first.get("payload"), dict)
        and isinstance(first["payload"].get("id"), str)
    )


def split(doc: Any) -> dict[str, list[Rollout]]:
    """Thread id -> [the file's `Rollout`], every line checked. Raises TraceValidationError naming
    the line and field of the first record that is not a rollout record."""
    rollout = read_rollout(doc)
    return {rollout.thread_id: [rollout]}


def group(chunks: dict[str, list[Rollout]]) -> dict[str, str]:
    """Thread id -> the id of the root thread it descends from among `chunks` (a thread whose parent
    is absent is its own root). Cycles (malformed parents) stop at the first repeated thread."""
    parents = {key: next((r.parent_id for r in rollouts if r.parent_id), None) for key, rollouts in chunks.items()}
    roots: dict[str, str] = {}
    for key in chunks:
        seen, node = {key}, key
        while (parent := parents.get(node)) in chunks and parent not in seen:
            seen.add(parent)
            node = parent
        roots[key] = node
    return roots


def build(root: str, rollouts: list[Rollout], sources: list[str]) -> Trace:
    """One trace from the rollouts `group` put under the root thread `root` (from several files).
    Raises ValueError when one thread comes in two files that disagree."""
    return build_trace(FORMAT, root, rollouts, list(dict.fromkeys(sources)))
