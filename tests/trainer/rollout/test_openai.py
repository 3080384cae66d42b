"""The `openai` rollout backend against FakeOpenAIServer (a scripted local fake, not a real LLM)."""

import numpy as np
import pytest

from swarmscope.importers import SourceFile, read_files
from swarmscope.interventions import Intervention
from swarmscope.model import Agent, Event, Trace, validate_trace
from tests.conftest import FIXTURES
from tests.fake_openai import FakeOpenAIServer
from trainer.rollout.chat import ChatClient, OpenAIError, VerdictError
from trainer.rollout.llm_plan import turn_seed
from trainer.rollout.llm_trace import find_orchestrator, normalise_answer, parse_speaker, score, speakers_of
from trainer.rollout.openai import OpenAIRollout, OpenAIVerifierRollout


def make_trace() -> Trace:
    events = [
        Event("h0", 0.0, "message", "human", content="What is 6 times 7?"),
        Event("h1", 1.0, "message", "planner", content="Plan: ask the solver."),
        Event("h2", 2.0, "message", "solver", content="43"),
        Event("h3", 3.0, "message", "planner", content="FINAL ANSWER: 43"),
    ]
    return Trace(
        "native",
        "t1",
        name="six times seven",
        events=events,
        agents=[
            Agent("human"),
            Agent("planner", system_prompt="You plan."),
            Agent("solver", system_prompt="You solve."),
        ],
        attributes={"ground_truth": "42", "synthetic_time": True},
    )


def answer(body):
    """43 when the solver's 43 is in the prompt, else 42."""
    seen = " ".join(m["content"] for m in body["messages"])
    if body["messages"][0]["content"] == "You solve.":
        return "I think 42"
    return "FINAL ANSWER: 43" if "[solver] 43" in seen else "FINAL ANSWER: 42."


@pytest.fixture
def fake():
    with FakeOpenAIServer(answer) as server:
        yield server


def backend(fake, trace=None, **options):
    options = {"retry_base_s": 0.01, **options}
    return OpenAIRollout(trace or make_trace(), ChatClient(fake.base_url, "fake-model", api_key="k", **options))


def test_remove_sends_system_prompt_and_edited_history_with_shared_seed_and_n(fake):
    result = backend(fake).paired(Intervention("remove", ("h2",)), np.arange(10, 14))
    assert result.speaker_order == "original"
    control, treated = fake.requests
    for body in (control, treated):
        assert body["n"] == 4 and body["seed"] == 10 and body["model"] == "fake-model"
        assert body["_path"] == "/v1/chat/completions" and body["_authorization"] == "Bearer k"
    prefix = [
        {"role": "system", "content": "You plan."},
        {"role": "user", "content": "[human] What is 6 times 7?"},
        {"role": "assistant", "content": "Plan: ask the solver."},
    ]
    assert control["messages"] == prefix + [{"role": "user", "content": "[solver] 43"}]
    assert treated["messages"] == prefix
    assert result.control.tolist() == [0.0] * 4 and result.treated.tolist() == [1.0] * 4


@pytest.mark.parametrize(
    "intervention, shown",
    [
        (Intervention("mask", ("h2",)), "[solver] [masked]"),
        (Intervention("replace", ("h2",), text="42"), "[solver] 42"),
    ],
)
def test_mask_and_replace_keep_the_position_with_the_edited_content(fake, intervention, shown):
    backend(fake).paired(intervention, np.array([0, 1]))
    assert fake.requests[1]["messages"][-1] == {"role": "user", "content": shown}


def test_resample_batches_the_fork_turn_then_continues_each_sample_at_its_seed(fake):
    result = backend(fake).paired(Intervention("resample", ("h2",)), np.array([5, 6, 7]))
    treated = fake.requests[1:]
    # the fork turn at the first seed (n = 3), the next re-generated turn (k = 1) at each sample's turn seed
    assert [(b["n"], b["seed"]) for b in treated] == [(3, 5)] + [(1, turn_seed(s, 1)) for s in (5, 6, 7)]
    assert treated[0]["messages"][0] == {"role": "system", "content": "You solve."}
    assert treated[1]["messages"][-1] == {"role": "user", "content": "[solver] I think 42"}
    assert result.treated.tolist() == [1.0, 1.0, 1.0]


def test_removing_an_agent_drops_its_turns(fake):
    backend(fake).paired(Intervention("remove", agents=("solver",)), np.array([0, 1]))
    assert all("[solver]" not in m["content"] for m in fake.requests[-1]["messages"])


def test_branch_traces_are_valid_and_name_the_fork(fake):
    result = backend(fake).paired(Intervention("remove", ("h2",)), np.array([3]), traces=True)
    branch = result.branches[0]
    validate_trace(branch)
    assert [e.id for e in branch.events] == ["h0", "h1", "h3~0"]
    assert branch.events[-1].content == "FINAL ANSWER: 42."
    assert branch.attributes["fork_event"] == "h2" and branch.attributes["speaker_order"] == "original"
    assert branch.source_id.startswith("t1/remove(event:h2)/seed-3/s-")  # then the sampling settings
    assert branch.attributes["sampling"]["model"] == "fake-model"


def test_scoring_is_normalised_exact_match():
    assert normalise_answer("  The 42. ") == "42"
    assert score("Some text. FINAL ANSWER: 42!", "42") == 1.0
    assert score("FINAL ANSWER: 142", "42") == 0.0 and score("42 or 43", "42") == 0.0


def test_a_slow_endpoint_raises_a_timeout(fake):
    fake.delay = 1.0
    with pytest.raises(OpenAIError, match="timed out after 0.2s"):
        backend(fake, timeout_s=0.2).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_a_5xx_raises_naming_the_status(fake):
    fake.status = 503
    with pytest.raises(OpenAIError, match="HTTP 503"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_malformed_json_raises(fake):
    fake.raw = b"{not json"
    with pytest.raises(OpenAIError, match="malformed JSON"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_wrong_number_of_choices_raises(fake):
    fake.answer = lambda body: ["only one"]
    with pytest.raises(OpenAIError, match="1 choices for n=2"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_from_trace_needs_an_endpoint_and_exact_match_needs_a_ground_truth(monkeypatch):
    monkeypatch.delenv("SWARMSCOPE_OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="SWARMSCOPE_OPENAI_BASE_URL"):
        OpenAIRollout.from_trace(make_trace())
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "m")
    trace = make_trace()
    assert OpenAIRollout.from_trace(trace).scoring == "exact_match"
    trace.attributes.pop("ground_truth")
    assert OpenAIRollout.from_trace(trace).scoring == "verifier"  # no ground truth: the verifier scores
    monkeypatch.setenv("SWARMSCOPE_OPENAI_SCORING", "exact_match")
    with pytest.raises(ValueError, match="no ground_truth"):
        OpenAIRollout.from_trace(trace)
    monkeypatch.setenv("SWARMSCOPE_OPENAI_SCORING", "judge")
    with pytest.raises(ValueError, match="unknown scoring 'judge'"):
        OpenAIRollout.from_trace(make_trace())
    assert OpenAIVerifierRollout.from_trace(make_trace()).scoring == "verifier"  # the class wins over the setting


# --- speaker order: an LLM orchestrator in the trace picks the next speaker ----------------------


def magentic_one() -> Trace:
    """tests/fixtures/whowhen_hand_crafted.json: a Magentic-One log whose Orchestrator delegates to
    WebSurfer and ComputerTerminal (h0 human, h1 thought, h2 -> WebSurfer, h3 WebSurfer "43", ...)."""
    source = SourceFile("whowhen_hand_crafted.json", (FIXTURES / "whowhen_hand_crafted.json").read_bytes())
    return read_files([source]).traces[0]


def is_speaker_question(body) -> bool:
    return body["messages"][-1]["content"].startswith("Read the above conversation. Then select the agent")


def picks(choice_by_seed):
    """An answer function: the speaker question of the sample at seed s gets choice_by_seed[s];
    every agent turn gets "FINAL ANSWER: 42"."""

    def answer(body):
        if is_speaker_question(body):
            return choice_by_seed[body["seed"]]
        return "FINAL ANSWER: 42"

    return answer


def test_the_orchestrator_and_speakers_of_a_magentic_one_log():
    trace = magentic_one()
    assert find_orchestrator(trace) == "Orchestrator"
    assert speakers_of(trace) == ["Orchestrator", "WebSurfer"]  # not the human, not the terminal (a tool)


def test_an_llm_orchestrator_picks_the_next_speaker_after_each_regenerated_turn(fake):
    fake.answer = picks({5: "WebSurfer", 6: " **orchestrator**. "})
    runner = OpenAIRollout(magentic_one(), ChatClient(fake.base_url, "fake-model"))
    result = runner.paired(Intervention("mask", ("h3",)), np.array([5, 6]), traces=True)
    assert result.speaker_order == "orchestrator" and runner.environment()["speaker_order"] == "orchestrator"
    assert runner.environment()["orchestrator"] == "Orchestrator"
    # slots h4 .. h10 are re-generated (h6, the terminal's output, is replayed); the fork turn h4 is
    # one request of n = 2, then each sample asks the orchestrator before each of the 5 other slots
    questions = [b for b in fake.requests if is_speaker_question(b)]
    assert len(questions) == 2 * 2 * 5 and result.choices.tolist() == [10, 10] and result.fallbacks.tolist() == [0, 0]
    assert all(b["n"] == 1 and b["temperature"] == 0.0 for b in questions)
    assert [b["seed"] for b in questions] == [5, 6] * 10
    forks = [k for k, b in enumerate(fake.requests) if b["n"] == 2]  # each arm's fork turn: n = 2
    first = next(b for b in fake.requests[forks[1] :] if is_speaker_question(b))["messages"]  # intervention arm
    assert first[-1]["content"].endswith(
        "from this list:\n- Orchestrator\n- WebSurfer\n"
        "Only return the agent's name, exactly as listed, and nothing else."
    )
    # the orchestrator's own view: its turns as `assistant`, the others prefixed with the speaker
    assert first[:5] == [
        {"role": "user", "content": "[human] What is 6 times 7? Answer with a number."},
        {"role": "assistant", "content": "Initial plan: ask WebSurfer, then compute."},
        {"role": "assistant", "content": "Please search for 6 times 7."},
        {"role": "user", "content": "[WebSurfer] [masked]"},
        {"role": "assistant", "content": "FINAL ANSWER: 42"},
    ]
    # the chosen speaker writes the slot: at seed 5 WebSurfer (the Orchestrator's turns come as
    # `user`), at seed 6 the Orchestrator (its turns come as `assistant`)
    turns = [b for b in fake.requests if not is_speaker_question(b) and b["n"] == 1]
    plan = "Initial plan: ask WebSurfer, then compute."
    assert all(
        b["messages"][1] == {"role": "user", "content": f"[Orchestrator] {plan}"} for b in turns if b["seed"] == 5
    )
    assert all(b["messages"][1] == {"role": "assistant", "content": plan} for b in turns if b["seed"] == 6)
    branch = result.branches[0]
    validate_trace(branch)
    assert [e.agent for e in branch.events[4:]] == [
        "Orchestrator",
        "WebSurfer",
        "ComputerTerminal",
        "WebSurfer",
        "WebSurfer",
        "WebSurfer",
        "WebSurfer",
    ]
    assert branch.events[5].type == "message" and branch.events[5].attributes["original_speaker"] == "Orchestrator"
    assert branch.attributes["speaker_order"] == "orchestrator" and branch.attributes["speaker_fallbacks"] == 0
    assert branch.attributes["speaker_choices"] == 5


def test_control_and_intervention_send_the_same_seeds_in_orchestrator_order(fake):
    fake.answer = picks({5: "WebSurfer", 6: "Orchestrator"})
    OpenAIRollout(magentic_one(), ChatClient(fake.base_url, "m")).paired(
        Intervention("mask", ("h3",)), np.array([5, 6])
    )
    requests = [(b["n"], b["seed"], b["temperature"], is_speaker_question(b)) for b in fake.requests]
    half = len(requests) // 2
    assert requests[:half] == requests[half:]  # control, then intervention: the same requests, seed by seed


@pytest.mark.parametrize(
    "answer", ["I think WebSurfer should go next.", "Assistant", "WebSurfer, then Orchestrator", ""]
)
def test_an_unparsable_or_unknown_speaker_falls_back_to_the_original_order_and_is_counted(fake, answer):
    fake.answer = picks({5: answer, 6: "WebSurfer"})
    result = OpenAIRollout(magentic_one(), ChatClient(fake.base_url, "m")).paired(
        Intervention("mask", ("h3",)), np.array([5, 6]), traces=True
    )
    assert result.choices.tolist() == [10, 10] and result.fallbacks.tolist() == [10, 0]
    branch = result.branches[0]  # seed 5: every slot kept its recorded speaker
    assert [e.agent for e in branch.events[4:]] == [e.agent for e in magentic_one().events[4:]]
    assert [e.type for e in branch.events[4:]] == [e.type for e in magentic_one().events[4:]]
    assert branch.attributes["speaker_fallbacks"] == 5 == branch.attributes["speaker_choices"]


def test_parse_speaker_is_strict():
    speakers = ["Orchestrator", "WebSurfer"]
    for answer in ("WebSurfer", " websurfer\n", "**WebSurfer**", "`WebSurfer`.", "[WebSurfer]", "'Orchestrator'"):
        assert parse_speaker(answer, speakers) in speakers, answer
    for answer in ("Next: WebSurfer", "WebSurfer or Orchestrator", "Web Surfer", "human", "", "FileSurfer"):
        assert parse_speaker(answer, speakers) is None, answer


def test_removing_an_agent_never_offers_it_as_a_speaker(fake):
    fake.answer = picks({0: "WebSurfer", 1: "WebSurfer"})
    result = OpenAIRollout(magentic_one(), ChatClient(fake.base_url, "m")).paired(
        Intervention("remove", agents=("WebSurfer",)), np.array([0, 1])
    )
    forks = [k for k, b in enumerate(fake.requests) if b["n"] == 2]  # each arm's fork turn: n = 2
    treated = fake.requests[forks[1] :]
    questions = [b for b in fake.requests if is_speaker_question(b)]
    assert "- WebSurfer" in questions[0]["messages"][-1]["content"]  # the control arm has WebSurfer
    assert all("- WebSurfer" not in b["messages"][-1]["content"] for b in treated if is_speaker_question(b))
    assert result.fallbacks.sum() > 0  # the orchestrator named the removed agent: not a listed speaker


def test_without_an_llm_orchestrator_the_original_order_is_kept(fake, fixtures):
    source = SourceFile("whowhen_algorithm.json", (fixtures / "whowhen_algorithm.json").read_bytes())
    group_chat = read_files([source]).traces[0]  # AG2: the chat manager never speaks in the log
    assert find_orchestrator(group_chat) is None
    assert OpenAIRollout(group_chat, ChatClient(fake.base_url, "m")).speaker_order == "original"
    forced = OpenAIRollout(magentic_one(), ChatClient(fake.base_url, "m"), speaker_order="original")
    assert forced.speaker_order == "original" and "orchestrator" not in forced.environment()
    forced.paired(Intervention("mask", ("h3",)), np.array([0, 1]))
    assert not any(is_speaker_question(b) for b in fake.requests)


def test_the_orchestrators_of_the_real_who_and_when_logs(shared_data):
    root = shared_data / "who-and-when"
    for subset, expected in (("Hand-Crafted", {"Orchestrator"}), ("Algorithm-Generated", {None})):
        files = sorted((root / subset).glob("*.json"))
        traces = read_files([SourceFile(f.name, f.read_bytes()) for f in files]).traces
        assert len(traces) == len(files) > 0
        assert {find_orchestrator(t) for t in traces} == expected, subset


def test_orchestrator_order_on_the_real_magentic_one_logs_gives_valid_branch_traces(shared_data, fake):
    """Each Hand-Crafted log, its first WebSurfer answer masked, 3 re-generated turns, 2 samples:
    the speaker question lists the log's speakers and the branch is a valid trace."""
    fake.answer = picks({0: "WebSurfer", 1: "Orchestrator"})
    files = sorted((shared_data / "who-and-when" / "Hand-Crafted").glob("*.json"))
    for trace in read_files([SourceFile(f.name, f.read_bytes()) for f in files]).traces:
        target = next(e.id for e in trace.events if e.agent == "WebSurfer" and e.type in ("message", "return"))
        fake.requests.clear()
        runner = OpenAIRollout(trace, ChatClient(fake.base_url, "m"), max_turns=3)
        result = runner.paired(Intervention("mask", (target,)), np.array([0, 1]), traces=True)
        assert result.speaker_order == "orchestrator" and result.fallbacks.tolist() == [0, 0], trace.source_id
        question = next(b for b in fake.requests if is_speaker_question(b))["messages"][-1]["content"]
        assert all(f"- {name}\n" in question for name in speakers_of(trace))
        validate_trace(result.branches[0])
        assert result.branches[0].attributes["speaker_choices"] == 2  # 3 turns: the fork turn, then 2 picks


# --- scoring by a verifier prompt ---------------------------------------------------------------


def verdicts(verdict):
    """Turns as in `answer`; a verifier request gets `verdict(final answer)`."""

    def reply(body):
        if body["messages"][0]["content"].startswith("You are a strict verifier"):
            shown = body["messages"][1]["content"].split("(its last turn):\n", 1)[1]
            return verdict(shown.rsplit("\n\nIs this final answer", 1)[0])
        return answer(body)

    return reply


def test_without_ground_truth_a_verifier_prompt_scores_each_sample(fake):
    trace = make_trace()
    trace.attributes.pop("ground_truth")
    trace.attributes["question"] = "What is 6 times 7?"
    fake.answer = verdicts(lambda final: '{"correct": true}' if "42" in final else '{"correct": false}')
    runner = OpenAIRollout(trace, ChatClient(fake.base_url, "m"))
    result = runner.paired(Intervention("remove", ("h2",)), np.array([3, 4]), traces=True)
    assert runner.environment()["scoring"] == "verifier" and "ground_truth" not in runner.environment()
    assert result.control.tolist() == [0.0, 0.0] and result.treated.tolist() == [1.0, 1.0]
    checks = [b for b in fake.requests if b["messages"][0]["content"].startswith("You are a strict verifier")]
    assert [(b["n"], b["seed"], b["temperature"]) for b in checks] == [(1, 3, 0.0), (1, 4, 0.0)] * 2
    prompt = checks[0]["messages"][1]["content"]
    assert (
        prompt.startswith("Task: What is 6 times 7?\nFinal answer of the system (its last turn):\nFINAL ANSWER: 43\n")
        and "Reference answer" not in prompt
    )
    assert prompt.endswith('Reply with only a JSON object and nothing else: {"correct": true} or {"correct": false}.')
    assert result.branches[0].rewards == {"outcome": 1.0} and result.branches[0].attributes["scoring"] == "verifier"


def test_the_verifier_backend_shows_the_reference_answer_and_reads_scores(fake):
    fake.answer = verdicts(lambda final: '```json\n{"score": 0.25, "reason": "close"}\n```')
    result = OpenAIVerifierRollout(make_trace(), ChatClient(fake.base_url, "m")).paired(
        Intervention("remove", ("h2",)), np.array([0, 1])
    )
    assert result.control.tolist() == result.treated.tolist() == [0.25, 0.25]
    assert "\nReference answer: 42\n" in fake.requests[-1]["messages"][1]["content"]


@pytest.mark.parametrize("verdict", ["yes", '{"correct": "true"}', '{"score": 1.5}', '{"correct": true} Sure!'])
def test_a_malformed_verdict_raises_naming_the_answer(fake, verdict):
    fake.answer = verdicts(lambda final: verdict)
    with pytest.raises(VerdictError, match="verdict on the final answer of the sample at seed 0 is malformed") as info:
        OpenAIVerifierRollout(make_trace(), ChatClient(fake.base_url, "m")).paired(
            Intervention("remove", ("h2",)), np.array([0, 1])
        )
    assert repr(verdict)[1:-1][:20] in str(info.value)


@pytest.mark.live_llm
def test_a_live_endpoint_runs_paired_samples(llm_endpoint):
    result = OpenAIRollout.from_trace(make_trace()).paired(Intervention("remove", ("h2",)), np.array([0, 1]))
    assert result.control.shape == result.treated.shape == (2,)


@pytest.mark.live_llm
def test_a_live_orchestrator_picks_speakers_and_a_live_verifier_scores(llm_endpoint, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TURNS", "3")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "24")  # not the job's 512 a turn: seconds, not minutes
    runner = OpenAIVerifierRollout.from_trace(magentic_one())
    assert runner.speaker_order == "orchestrator" and runner.scoring == "verifier"
    result = runner.paired(Intervention("remove", ("h3",)), np.array([0, 1]), traces=True)
    assert result.control.shape == result.treated.shape == (2,)
    assert all(((0 <= rewards) & (rewards <= 1)).all() for rewards in (result.control, result.treated))
    assert (result.choices > 0).all() and (result.fallbacks <= result.choices).all()
    validate_trace(result.branches[0])
    assert result.branches[0].attributes["speaker_order"] == "orchestrator"
