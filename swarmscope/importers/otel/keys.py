"""The attribute names the span mapping reads, in one place: the auditable list of what is read.

Names come from the convention packages where they define them, so a rename shows up on upgrade:
`openinference-semantic-conventions` (`openinference.semconv.trace`,
https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md) and
`opentelemetry-semantic-conventions` (`opentelemetry.semconv._incubating.attributes.gen_ai_attributes`;
since 0.60 every GenAI name there is marked "moved to
https://github.com/open-telemetry/semantic-conventions-genai", which has no Python package yet).
Names neither package has yet (the agent-interaction attributes, `plan`, the memory operations,
the `gen_ai.evaluation.result` event) are written out with the spec they come from. Plain string
constants: importing them loads no SDK. How each is used: docs/otel-mapping.md.
"""

from __future__ import annotations

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
    ToolCallAttributes,
)
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

OI = SpanAttributes
GenAiOperation = gen_ai.GenAiOperationNameValues

# --- OpenTelemetry GenAI (semantic-conventions-genai, model/gen-ai/registry.yaml) ------------------

OPERATION_NAME = gen_ai.GEN_AI_OPERATION_NAME
AGENT_NAME = gen_ai.GEN_AI_AGENT_NAME
AGENT_ID = gen_ai.GEN_AI_AGENT_ID
AGENT_DESCRIPTION = gen_ai.GEN_AI_AGENT_DESCRIPTION
PROVIDER_NAME = gen_ai.GEN_AI_PROVIDER_NAME
SYSTEM = gen_ai.GEN_AI_SYSTEM  # deprecated for gen_ai.provider.name; still written
SYSTEM_INSTRUCTIONS = gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
CONVERSATION_ID = gen_ai.GEN_AI_CONVERSATION_ID
WORKFLOW_NAME = gen_ai.GEN_AI_WORKFLOW_NAME
TOOL_NAME = gen_ai.GEN_AI_TOOL_NAME
TOOL_CALL_ARGUMENTS = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_CALL_RESULT = gen_ai.GEN_AI_TOOL_CALL_RESULT
GEN_AI_TOOL_CALL_ID = gen_ai.GEN_AI_TOOL_CALL_ID
INPUT_MESSAGES = gen_ai.GEN_AI_INPUT_MESSAGES
OUTPUT_MESSAGES = gen_ai.GEN_AI_OUTPUT_MESSAGES
PROMPT = gen_ai.GEN_AI_PROMPT  # deprecated
COMPLETION = gen_ai.GEN_AI_COMPLETION  # deprecated
REQUEST_MODEL = gen_ai.GEN_AI_REQUEST_MODEL
RESPONSE_MODEL = gen_ai.GEN_AI_RESPONSE_MODEL
USAGE_INPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS
USAGE_OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
USAGE_PROMPT_TOKENS = gen_ai.GEN_AI_USAGE_PROMPT_TOKENS  # deprecated
USAGE_COMPLETION_TOKENS = gen_ai.GEN_AI_USAGE_COMPLETION_TOKENS  # deprecated
USAGE_CACHE_READ = gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
USAGE_CACHE_CREATION = gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
USAGE_REASONING = gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
RETRIEVAL_QUERY_TEXT = gen_ai.GEN_AI_RETRIEVAL_QUERY_TEXT
RETRIEVAL_DOCUMENTS = gen_ai.GEN_AI_RETRIEVAL_DOCUMENTS
EVALUATION_NAME = gen_ai.GEN_AI_EVALUATION_NAME
EVALUATION_SCORE_VALUE = gen_ai.GEN_AI_EVALUATION_SCORE_VALUE
EVALUATION_SCORE_LABEL = gen_ai.GEN_AI_EVALUATION_SCORE_LABEL
EVALUATION_EXPLANATION = gen_ai.GEN_AI_EVALUATION_EXPLANATION

#: `gen_ai.operation.name` values.
INVOKE_AGENT = GenAiOperation.INVOKE_AGENT.value
EXECUTE_TOOL = GenAiOperation.EXECUTE_TOOL.value
CHAT = GenAiOperation.CHAT.value
TEXT_COMPLETION = GenAiOperation.TEXT_COMPLETION.value
GENERATE_CONTENT = GenAiOperation.GENERATE_CONTENT.value
CREATE_AGENT = GenAiOperation.CREATE_AGENT.value
INVOKE_WORKFLOW = GenAiOperation.INVOKE_WORKFLOW.value
RETRIEVAL = GenAiOperation.RETRIEVAL.value
#: Not in the package yet (registry.yaml, `gen_ai.operation.name` members).
PLAN = "plan"
MEMORY_OPERATIONS = (
    "search_memory",
    "create_memory",
    "update_memory",
    "upsert_memory",
    "delete_memory",
    "create_memory_store",
    "delete_memory_store",
)

#: Memory attributes, not in the package yet (registry.yaml).
MEMORY_QUERY_TEXT = "gen_ai.memory.query.text"
MEMORY_RECORDS = "gen_ai.memory.records"

#: Agent-to-agent interactions, not in the package yet (semantic-conventions-genai
#: docs/gen-ai/non-normative/examples-agent-interactions.md: the `gen_ai.execute_tool.transfer.internal`
#: and `gen_ai.invoke_agent.caller.client` refinements).
TRANSFER_MODE = "gen_ai.transfer.mode"  # "return_to_caller" | "pass_control"
TRANSFER_TARGET_NAME = "gen_ai.transfer.target.name"
TRANSFER_TARGET_TYPE = "gen_ai.transfer.target.type"  # "agent" | "human" | "workflow"
PASS_CONTROL = "pass_control"
CALLER_NAME = "gen_ai.caller.name"
CALLER_TYPE = "gen_ai.caller.type"  # "agent" | "workflow"
#: The earlier proposal (semantic-conventions-genai pull request 98): a hand-off `execute_tool`.
HANDOFF_SOURCE_NAME = "gen_ai.agent.handoff.source.name"
HANDOFF_TARGET_NAME = "gen_ai.agent.handoff.target.name"
#: The evaluation event (model/gen-ai/events.yaml).
EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"

# --- Agent names that frameworks write outside the conventions ---------------------------------------
#: pydantic-ai's agent run span names its agent here (`InstrumentationConfig.agent_name_attr` of its
#: instrumentation versions 1 and 2, pydantic_ai/_instrumentation.py; later versions write
#: `gen_ai.agent.name` beside it).
PYDANTIC_AI_AGENT_NAME = "agent_name"
#: pydantic-ai's tool span ("running tool") holds the call's arguments and result here in its
#: instrumentation data format 2 (`InstrumentationNames.for_version(2)`: `tool_arguments_attr`,
#: `tool_result_attr`, pydantic_ai/_instrumentation.py); versions 3 on write
#: `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` instead.
PYDANTIC_AI_TOOL_ARGUMENTS = "tool_arguments"
PYDANTIC_AI_TOOL_RESPONSE = "tool_response"

# --- Google ADK's own content attributes -----------------------------------------------------------
#: Its legacy telemetry (`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`, the default before google-adk
#: 2.13; google/adk/telemetry/tracing.py): the JSON of the `LlmRequest` / `LlmResponse` on its
#: `call_llm` span, a tool call's arguments and response on its `execute_tool` span.
ADK_LLM_REQUEST = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE = "gcp.vertex.agent.llm_response"
ADK_TOOL_CALL_ARGS = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE = "gcp.vertex.agent.tool_response"

# --- OpenInference ---------------------------------------------------------------------------------

OI_SPAN_KIND = OI.OPENINFERENCE_SPAN_KIND
OI_AGENT_NAME = OI.AGENT_NAME
GRAPH_NODE_ID = OI.GRAPH_NODE_ID
GRAPH_NODE_NAME = OI.GRAPH_NODE_NAME
GRAPH_NODE_PARENT_ID = OI.GRAPH_NODE_PARENT_ID
INPUT_VALUE = OI.INPUT_VALUE
OUTPUT_VALUE = OI.OUTPUT_VALUE
SESSION_ID = OI.SESSION_ID
OI_TOOL_NAME = OI.TOOL_NAME
LLM_MODEL_NAME = OI.LLM_MODEL_NAME
LLM_INPUT_MESSAGES = OI.LLM_INPUT_MESSAGES
LLM_OUTPUT_MESSAGES = OI.LLM_OUTPUT_MESSAGES
LLM_PROMPTS = OI.LLM_PROMPTS
LLM_TOOLS = OI.LLM_TOOLS
LLM_TOKENS_PROMPT = OI.LLM_TOKEN_COUNT_PROMPT
LLM_TOKENS_COMPLETION = OI.LLM_TOKEN_COUNT_COMPLETION
LLM_TOKENS_TOTAL = OI.LLM_TOKEN_COUNT_TOTAL
LLM_TOKENS_CACHE_READ = OI.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ
LLM_TOKENS_CACHE_WRITE = OI.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE
LLM_TOKENS_REASONING = OI.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING
#: Inside one flattened message (`llm.input_messages.N.<these>`).
MESSAGE_ROLE = MessageAttributes.MESSAGE_ROLE
MESSAGE_CONTENT = MessageAttributes.MESSAGE_CONTENT
MESSAGE_CONTENTS = MessageAttributes.MESSAGE_CONTENTS
MESSAGE_NAME = MessageAttributes.MESSAGE_NAME
MESSAGE_TOOL_CALLS = MessageAttributes.MESSAGE_TOOL_CALLS
MESSAGE_TOOL_CALL_ID = MessageAttributes.MESSAGE_TOOL_CALL_ID
CONTENT_TYPE = MessageContentAttributes.MESSAGE_CONTENT_TYPE
CONTENT_TEXT = MessageContentAttributes.MESSAGE_CONTENT_TEXT
TOOL_CALL_ID = ToolCallAttributes.TOOL_CALL_ID
TOOL_CALL_NAME = ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
TOOL_CALL_ARGUMENTS_JSON = ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON
TOOL_JSON_SCHEMA = ToolAttributes.TOOL_JSON_SCHEMA
TOOL_SCHEMA_NAME = ToolAttributes.TOOL_NAME

#: `openinference.span.kind` values.
OI_KIND = OpenInferenceSpanKindValues
OI_AGENT, OI_CHAIN = OI_KIND.AGENT.value, OI_KIND.CHAIN.value
OI_LLM, OI_TOOL, OI_RETRIEVER = OI_KIND.LLM.value, OI_KIND.TOOL.value, OI_KIND.RETRIEVER.value
OI_EVALUATOR = OI_KIND.EVALUATOR.value
#: The tool argument naming the agent a hand-off tool passes control to: LlamaIndex AgentWorkflow's
#: `handoff(ctx, to_agent, reason)` (llama_index.core.agent.workflow.multi_agent_workflow).
HANDOFF_TARGET_ARGUMENTS = ("to_agent",)

# --- Framework conventions read through the instrumentors' input values ----------------------------

#: The tool argument that names the agent a delegation tool hands its work to: CrewAI's "Delegate
#: work to coworker" and "Ask question to coworker" (crewai `tools/agent_tools`,
#: `BaseAgentTool._get_coworker` reads `coworker`, else `co_worker`).
DELEGATION_TARGET_ARGUMENTS = ("coworker", "co_worker")
#: The argument of an agent span's recorded call (`input.value`) that is the agent itself, and its
#: name field: OpenInference's CrewAI instrumentor records `Task._execute_core(agent, ...)` with
#: the agent dumped as an object (1.x) or as its pydantic repr `role='...'` (0.1.x).
AGENT_ARGUMENT, AGENT_ROLE = "agent", "role"

# Microsoft Agent Framework's own workflow spans (agent_framework/observability.py): an edge group
# delivering a message names its source and target executors; the executor span that processes it
# and the edge group link to the `message.send` span that sent it.
AF_MESSAGE_SOURCE_ID = "message.source_id"
AF_MESSAGE_TARGET_ID = "message.target_id"
AF_EXECUTOR_ID = "executor.id"
