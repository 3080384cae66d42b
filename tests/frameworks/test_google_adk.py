"""Google ADK, with its own OpenTelemetry spans and with OpenInference's instrumentor: the trace
holds what programs/google_adk.py did, written here by hand from the program (its SCRIPT).

Five ways a user runs it (ADK's telemetry knobs, as ADK documents them):
- `native`: the defaults of google-adk 2.13 (schema v2, GenAI semconv spans, no content captured);
- `content_on_spans`: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`;
- `content_on_logs`: `...=EVENT_ONLY` with the logs exporter on: model content arrives as log
  records that the app joins to their spans; ADK records no tool arguments in this mode;
- `legacy`: `ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`, the format of google-adk before 2.13
  (`call_llm` spans, content in `gcp.vertex.agent.*`), content on by default;
- `openinference`: `GoogleADKInstrumentor` on the legacy schema. Its 1.0.5 release does not follow
  schema v2 (2.13's default): it has no `call_llm` span to write to there, so every model call of
  an agent run lands on one span, the last overwriting the others (calls and tokens lost before
  export; docs/otel-mapping.md says so).
"""

import json

import pytest

from tests.frameworks import facts

COORDINATOR, FACT_CHECKER, BOOKER, GUIDE = "coordinator", "fact_checker", "booker", "guide"
ANSWER = "Start at the Louvre at 9am, then walk the Seine to Notre-Dame."
FACT = "Yes: the Louvre is in Paris, 1st arrondissement."

#: The model turns in time order, as the program scripts them: (agent, what it said, tokens);
#: tokens are Gemini's total: prompt + candidates + thoughts.
TURNS = [
    (COORDINATOR, 'lookup_city({"city": "Paris"})', 120 + 11),
    (COORDINATOR, 'fact_checker({"request": "Is the Louvre in Paris?"})', 160 + 13),
    (FACT_CHECKER, FACT, 40 + 12),
    (COORDINATOR, 'transfer_to_agent({"agent_name": "booker"})', 190 + 7),
    (BOOKER, 'Booked two nights at Hotel Lutetia, Paris.\ntransfer_to_agent({"agent_name": "coordinator"})', 210 + 16),
    (COORDINATOR, 'transfer_to_agent({"agent_name": "guide"})', 240 + 8),
    (GUIDE, ANSWER, 260 + 17 + 9),
]
REASONING, CACHED = 9, 128

#: mode -> (environment, model content recorded, tool arguments and results recorded)
MODES = {
    "native": ({}, False, False),
    "content_on_spans": ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, True, True),
    "content_on_logs": (
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY", "OTEL_LOGS_EXPORTER": "otlp"},
        True,
        False,
    ),
    "legacy": ({"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}, True, True),
    "openinference": (
        {"SWARMSCOPE_ADK_TRACING": "openinference", "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
        True,
        True,
    ),
}
#: No Google endpoint: any HTTP(S) call that is not to the app on loopback goes to a dead proxy.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}


@pytest.mark.parametrize("mode", list(MODES))
def test_coordinator_transfers_agent_tool_and_function_tool(run_program, mode):
    environment, said_recorded, tools_recorded = MODES[mode]
    ran = run_program("google-adk", "google_adk", env={"OTEL_SERVICE_NAME": "trip-planner", **OFFLINE, **environment})
    requests = json.loads(ran.stdout.strip().splitlines()[-1].removeprefix("REQUESTS "))
    # the agent used as a tool got the coordinator's request as its input
    assert requests[FACT_CHECKER] == [{"parts": [{"text": "Is the Louvre in Paris?"}], "role": "user"}]
    trace = ran.trace

    # the four agents (no runner, workflow or service among them), each sub-agent under the coordinator
    # (sorted: the stored trace lists agents in the order OTLP batches first brought them)
    assert sorted((a.name, a.parent or "") for a in trace.agents) == [
        (BOOKER, COORDINATOR),
        (COORDINATOR, ""),
        (FACT_CHECKER, COORDINATOR),
        (GUIDE, COORDINATOR),
    ]
    # the agent-as-tool call, then ADK's `transfer_to_agent` hand-offs, in order
    assert facts.delegations(trace) == [
        (COORDINATOR, FACT_CHECKER),
        (COORDINATOR, BOOKER),
        (BOOKER, COORDINATOR),
        (COORDINATOR, GUIDE),
    ]
    assert facts.spawns(trace) == [(COORDINATOR, FACT_CHECKER), (COORDINATOR, BOOKER), (COORDINATOR, GUIDE)]
    delegates = [e for e in facts._ordered(trace) if e.type == "delegate"]
    assert [e.tool for e in delegates] == [None, "transfer_to_agent", "transfer_to_agent", "transfer_to_agent"]
    # the agent-as-tool delegation carries its input (the tool call's arguments) where ADK records them
    assert delegates[0].content == ('{"request": "Is the Louvre in Paris?"}' if tools_recorded else None)
    if tools_recorded:
        assert [e.content for e in delegates[1:]] == [
            '{"agent_name": "booker"}',
            '{"agent_name": "coordinator"}',
            '{"agent_name": "guide"}',
        ]
    # the fact checker's answer returns to the coordinator's next turn
    returned = [
        (src.agent, dst.agent, dst.content) for src, dst in facts.edges_of(trace, "return") if src.agent == FACT_CHECKER
    ]
    assert returned == [(FACT_CHECKER, COORDINATOR, TURNS[3][1] if said_recorded else None)]

    # the one function tool, with its arguments and result
    if tools_recorded:
        assert facts.tool_calls(trace) == [(COORDINATOR, "lookup_city", '{"city": "Paris"}')]
        assert facts.tool_results(trace) == [(COORDINATOR, "lookup_city", '{"city": "Paris", "country": "France"}')]
    else:
        assert facts.tool_calls(trace) == [(COORDINATOR, "lookup_city", None)]
        assert facts.tool_results(trace) == []

    # every model turn once, by its agent, with what it said (where recorded) and its usage
    turns = [e for e in facts._ordered(trace) if e.type in ("message", "return")]
    assert [(e.agent, e.content, e.tokens) for e in turns] == [
        (agent, text if said_recorded else None, tokens) for agent, text, tokens in TURNS
    ]
    assert not any(e.attributes.get("tokens_estimated") for e in turns)
    if said_recorded:
        assert sum(ANSWER in (e.content or "") for e in trace.events) == 1
        assert sum(FACT in (e.content or "") for e in trace.events) == 1
    assert facts.measured_tokens(trace) == sum(tokens for _, _, tokens in TURNS)
    assert trace.costs["reasoning_tokens"] == REASONING
    assert trace.costs["cache_read_tokens"] == CACHED
