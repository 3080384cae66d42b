"""Held-out versions: an older OpenAI Agents SDK (0.2) with a pre-1.0 OpenInference instrumentor
(`requirements/openai-agents-old.txt`) running programs/openai_agents_handoffs.py, checked against
the same hand-written facts as test_openai_agents.py."""

import pytest

from tests.frameworks.test_openai_agents import ANSWER, check, script


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_older_sdk_and_instrumentor(run_program, api):
    ran = run_program("openai-agents-old", "openai_agents_handoffs", script, env={"AGENTS_API": api})
    assert {r.api for r in ran.model_requests} == {"responses" if api == "responses" else "chat"}
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    check(ran.trace, details=api == "responses")
