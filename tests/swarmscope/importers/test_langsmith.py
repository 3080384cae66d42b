"""LangSmith runs importer: a LangGraph supervisor run tree, a run-ingest post/patch batch (both
hand-written after the langsmith-sdk's recorded payloads, see tests/fixtures/README.txt), flat run
lists, chunks over several files, detection and bad input."""

import ast
import json
import uuid
from pathlib import Path

from swarmscope.importers import SourceFile, detect, langsmith, read_files
from swarmscope.model import Trace


def _read(*sources: SourceFile) -> Trace:
    result = read_files(list(sources))
    assert [f.error for f in result.files] == [None] * len(sources), result.files
    assert {f.format for f in result.files} == {"langsmith"}
    (trace,) = result.traces
    return trace


def _file(path: Path) -> SourceFile:
    return SourceFile(path.name, path.read_bytes())


def test_supervisor_run_tree(fixtures):
    """langgraph-supervisor: the graph runs `supervisor` (steps 1 and 3) and `research_expert`
    (step 2); the supervisor hands off with `transfer_to_research_expert`; the expert searches once
    and its answer returns to the supervisor. Tokens: 120+20, 200+30, 260+60, 300+40. The agents
    are the supervisor and its expert, as for LangSmith's OTel export of such a program
    (tests/frameworks/test_langgraph.py): the graph run `LangGraph` is the workflow, no agent."""
    trace = _read(_file(fixtures / "langsmith_supervisor_run_tree.json"))
    assert trace.source_format == "langsmith"
    assert trace.source_id == "1f0a6c2e0b1d6e4a9c3b000000000010"
    assert trace.name == "LangGraph"
    assert [(a.name, a.parent) for a in trace.agents] == [("supervisor", None), ("research_expert", "supervisor")]
    ordered = sorted(trace.events, key=lambda e: (e.t, trace.events.index(e)))
    assert [(e.agent, e.to) for e in ordered if e.type == "spawn"] == [("supervisor", "research_expert")]
    assert [(e.agent, e.to, e.tool) for e in ordered if e.type == "delegate"] == [
        ("supervisor", "research_expert", "transfer_to_research_expert")
    ]
    (returned,) = [e for e in trace.events if e.type == "return"]
    assert (returned.from_, returned.to) == ("research_expert", "supervisor")
    assert returned.content == "Lyon has about 522,000 inhabitants."
    by_id = {e.id: e for e in trace.events}
    (back,) = [x for x in trace.edges if x.type == "return"]
    assert by_id[back.src] is returned
    assert by_id[back.dst].content == "Lyon has about 522,000 inhabitants; doubled, that is 1,044,000."
    ((agent, tool, arguments),) = [(e.agent, e.tool, e.content) for e in ordered if e.type == "tool_call"]
    assert (agent, tool, _arguments(arguments)) == ("research_expert", "web_search", {"query": "population of Lyon"})
    assert [(e.agent, e.tool, e.content) for e in ordered if e.type == "tool_result"] == [
        ("research_expert", "web_search", "Lyon: 522,250 inhabitants (2021 census).")
    ]
    turns = ("message", "return")
    assert [(e.agent, e.content, e.tokens) for e in ordered if e.type in turns] == [
        ("supervisor", "transfer_to_research_expert({})", 120 + 20),
        ("research_expert", 'web_search({"query": "population of Lyon"})', 200 + 30),
        ("research_expert", "Lyon has about 522,000 inhabitants.", 260 + 60),
        ("supervisor", "Lyon has about 522,000 inhabitants; doubled, that is 1,044,000.", 300 + 40),
    ]
    assert not any(e.attributes.get("tokens_estimated") for e in ordered if e.type in turns)
    steps = {(e.agent, e.type): e.attributes.get("graph_node") for e in ordered if e.type != "spawn"}
    assert steps[("research_expert", "tool_call")] == "tools" and steps[("research_expert", "message")] == "agent"
    assert trace.costs["tokens"] == 140 + 230 + 320 + 340
    assert trace.costs["tool_calls"] == 1
    assert trace.attributes["session_id"] == "thread-7"
    assert trace.attributes["project"] == "supervisor-demo"
    final = [e for e in trace.events if e.agent == "supervisor" and e.attributes.get("model")][-1]
    assert final.attributes["model"] == "gpt-4o-2024-08-06"


def _arguments(content: str | None) -> dict:
    """A tool call's arguments, JSON or the Python repr LangChain's older tool runs record."""
    assert content is not None
    try:
        return json.loads(content)
    except ValueError:
        return ast.literal_eval(content)


def test_react_graph_run_tree_is_one_agent(fixtures):
    """A ReAct graph at the top (`create_react_agent`: nodes `agent` and `tools`) is one agent, named
    by its graph run (`LangGraph` when the program names it nothing), not `LangGraph` delegating to
    `agent`: the research expert's sub-graph of the supervisor fixture run as the top graph."""
    tree = json.loads((fixtures / "langsmith_supervisor_run_tree.json").read_text())
    graph = tree["child_runs"][1]
    assert graph["name"] == "research_expert"

    def lift(run):  # its node tasks' namespaces without the outer `research_expert:<task>` segment
        metadata = run["extra"]["metadata"]
        metadata["langgraph_checkpoint_ns"] = metadata["langgraph_checkpoint_ns"].split("|", 1)[1]
        for child in run.get("child_runs") or []:
            lift(child)

    for node in graph["child_runs"]:
        lift(node)
    for name in ("LangGraph", "lyon_researcher"):
        graph = {**graph, "name": name, "extra": {"metadata": {"thread_id": "thread-8"}}}
        trace = _read(SourceFile("react.json", json.dumps(graph).encode()))
        assert [(a.name, a.parent) for a in trace.agents] == [(name, None)]
        assert {e.type for e in trace.events} == {"message", "tool_call", "tool_result"}
        assert [e.tool for e in trace.events if e.type == "tool_call"] == ["web_search"]
        assert trace.costs["tokens"] == 230 + 320


def _run_tree_of(dump: list[dict]) -> list[dict]:
    """The runs that LangSmith's OTel exporter wrote as `dump` (console-exporter span records): run
    type, name, metadata, inputs and outputs (`gen_ai.prompt` / `gen_ai.completion`, the run's JSON)
    back as a flat run list."""

    def run_id(hex_id: str) -> str:
        return str(uuid.UUID(hex_id.removeprefix("0x").rjust(32, "0")))

    runs = []
    for span in dump:
        attributes = span["attributes"]
        prefix = "langsmith.metadata."
        metadata = {k.removeprefix(prefix): v for k, v in attributes.items() if k.startswith(prefix)}
        runs.append(
            {
                "id": run_id(span["context"]["span_id"]),
                "trace_id": run_id(span["context"]["trace_id"]),
                "parent_run_id": run_id(span["parent_id"]) if span["parent_id"] else None,
                "name": attributes["langsmith.trace.name"],
                "run_type": attributes["langsmith.span.kind"],
                "start_time": span["start_time"],
                "end_time": span["end_time"],
                "extra": {"metadata": metadata},
                "inputs": json.loads(attributes.get("gen_ai.prompt") or "null"),
                "outputs": json.loads(attributes.get("gen_ai.completion") or "null"),
            }
        )
    return runs


def test_run_tree_reads_as_langsmith_otel_export(fixtures):
    """The same LangGraph run as a run tree and as LangSmith's OTel export (the real dump of
    tests/frameworks/programs/lg_stategraph.py, tests/fixtures/README.txt) gives the same agents,
    `Command(goto=...)` hand-offs, turns, tool call and tokens."""
    path = fixtures / "otel_sdk_langgraph_stategraph_langsmith.json"
    exported = read_files([SourceFile(path.name, path.read_bytes())]).traces[0]
    tree = _read(SourceFile("runs.json", json.dumps(_run_tree_of(json.loads(path.read_text()))).encode()))

    def facts(trace: Trace) -> dict:
        ordered = sorted(trace.events, key=lambda e: (e.t, trace.events.index(e)))
        return {
            "agents": [(a.name, a.parent) for a in trace.agents],
            "delegates": [(e.agent, e.to, e.attributes.get("transfer_mode")) for e in ordered if e.type == "delegate"],
            "returns": [(e.agent, e.to, e.content) for e in ordered if e.type == "return"],
            "turns": [(e.agent, e.content, e.tokens) for e in ordered if e.type == "message"],
            "tools": [(e.type, e.agent, e.tool, _arguments(e.content)) for e in ordered if e.type == "tool_call"],
            "results": [(e.agent, e.tool, e.content) for e in ordered if e.type == "tool_result"],
            "tokens": trace.costs["tokens"],
        }

    assert facts(tree) == facts(exported)
    assert facts(tree)["agents"] == [("supervisor", None), ("researcher", "supervisor"), ("writer", "supervisor")]
    assert facts(tree)["tokens"] == 33 + 40 + 44 + 46 + 60 + 63


def test_post_patch_batch(fixtures):
    """A traceable chain with a retriever and a wrap_openai LLM run; the LLM's patch has no `id`
    (the JS SDK's shape): its run is found through `dotted_order`."""
    trace = _read(_file(fixtures / "langsmith_post_patch_batch.json"))
    assert trace.name == "answer_question"
    assert trace.attributes["spans"] == 3
    assert trace.attributes["session_id"] == "conv-2024-10-11-a"
    (call,) = [e for e in trace.events if e.attributes.get("model")]
    assert call.content == "Howdy! How can I assist you today?"
    assert call.tokens == 18 and call.attributes["input_tokens"] == 9
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["search_docs"]
    assert trace.costs["wall_clock_s"] == 1.121227
    # no service in a run tree: the traceable chain's run names the agent (not `unknown_service`)
    assert [a.name for a in trace.agents] == ["answer_question"]


def test_post_and_patch_in_separate_files_merge(fixtures):
    doc = json.loads((fixtures / "langsmith_post_patch_batch.json").read_text())
    posts = SourceFile("posts.json", json.dumps({"post": doc["post"]}).encode())
    patches = SourceFile("patches.jsonl", "\n".join(json.dumps({"patch": [p]}) for p in doc["patch"]).encode())
    trace = _read(posts, patches)
    assert trace.attributes["sources"] == ["posts.json", "patches.jsonl"]
    assert trace.attributes["spans"] == 3
    assert trace.costs["tokens"] == 18


def test_flat_run_list_and_dotted_order(fixtures):
    """`client.list_runs` output: runs without `child_runs`, parents only in `dotted_order`."""
    doc = json.loads((fixtures / "langsmith_post_patch_batch.json").read_text())
    patches = {p.get("id") or p["dotted_order"].rsplit("Z", 1)[-1]: p for p in doc["patch"]}
    runs = []
    for post in doc["post"]:
        run = {**post, **patches[post["id"]]}
        run.pop("parent_run_id", None)
        runs.append(run)
    trace = _read(SourceFile("runs.json", json.dumps(runs).encode()))
    assert trace.attributes["spans"] == 3
    assert {e.attributes["parent_span_id"] for e in trace.events} == {langsmith.span_id_of(doc["post"][0]["id"])}


def test_run_tree_ids(fixtures):
    doc = json.loads((fixtures / "langsmith_supervisor_run_tree.json").read_text())
    ((trace_id, records),) = langsmith.split(doc).items()
    spans = langsmith.to_spans(trace_id, records)
    assert len(spans) == 16
    assert all(len(s.sid) == 16 for s in spans)
    by_run = {s.attributes["langsmith.run_id"]: s for s in spans}
    child = doc["child_runs"][0]
    assert by_run[child["id"]].parent_id == by_run[doc["id"]].span_id
    assert by_run[child["id"]].attributes["langsmith.metadata.langgraph_node"] == "supervisor"
    # the agents are the span mapping's LangGraph rule's: no run names one itself
    assert not any("gen_ai.agent.name" in s.attributes for s in spans)
    assert by_run[child["id"]].attributes["openinference.span.kind"] == "CHAIN"


def test_sniff_accepts_runs_and_nothing_else(fixtures):
    tree = json.loads((fixtures / "langsmith_supervisor_run_tree.json").read_text())
    batch = json.loads((fixtures / "langsmith_post_patch_batch.json").read_text())
    assert detect(tree) is langsmith
    assert detect([tree, tree]) is langsmith
    assert detect(batch) is langsmith
    assert detect([batch, batch]) is langsmith
    assert not langsmith.sniff({"post": []})
    assert not langsmith.sniff({"post": [{"id": "x"}]})
    for other in sorted(fixtures.glob("*.json")):
        if not other.name.startswith("langsmith_"):
            assert not langsmith.sniff(json.loads(other.read_text())), other.name


def test_bad_time_fails_the_whole_file_naming_the_run(fixtures):
    doc = json.loads((fixtures / "langsmith_post_patch_batch.json").read_text())
    doc["post"][1]["start_time"] = "soon"
    result = read_files([SourceFile("bad.json", json.dumps(doc).encode())])
    (report,) = result.files
    assert report.format == "langsmith"
    assert "post[1]" in report.error and doc["post"][1]["id"] in report.error and "start_time" in report.error
    assert result.traces == []


def test_bad_child_runs_names_the_path(fixtures):
    tree = json.loads((fixtures / "langsmith_supervisor_run_tree.json").read_text())
    tree["child_runs"][1]["child_runs"][0]["child_runs"] = {"not": "a list"}
    result = read_files([SourceFile("tree.json", json.dumps(tree).encode())])
    assert "run.child_runs[1].child_runs[0]: child_runs must be a list" in result.files[0].error
    assert result.traces == []


def test_epoch_millisecond_times(fixtures):
    doc = json.loads((fixtures / "langsmith_post_patch_batch.json").read_text())
    for part in ("post", "patch"):
        for run in doc[part]:
            for key in ("start_time", "end_time"):
                if key in run:
                    run[key] = langsmith.time_ns(run[key]) / 1e6
    trace = _read(SourceFile("ms.json", json.dumps(doc).encode()))
    assert abs(trace.costs["wall_clock_s"] - 1.121227) < 1e-3
