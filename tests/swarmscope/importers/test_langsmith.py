"""LangSmith runs importer: a LangGraph supervisor run tree, a run-ingest post/patch batch (both
hand-written after the langsmith-sdk's recorded payloads, see tests/fixtures/README.txt), flat run
lists, chunks over several files, detection and bad input."""

import json
from collections import Counter
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


def _delegations(trace: Trace) -> Counter:
    return Counter((e.from_, e.to) for e in trace.events if e.type == "delegate")


def test_supervisor_run_tree(fixtures):
    """langgraph-supervisor: the graph runs `supervisor` (steps 1 and 3) and `research_expert`
    (step 2); the supervisor hands off with `transfer_to_research_expert`; the expert searches once
    and its answer returns to the supervisor. Tokens: 120+20, 200+30, 260+60, 300+40."""
    trace = _read(_file(fixtures / "langsmith_supervisor_run_tree.json"))
    assert trace.source_format == "langsmith"
    assert trace.source_id == "1f0a6c2e0b1d6e4a9c3b000000000010"
    assert trace.name == "LangGraph"
    assert [(a.name, a.parent) for a in trace.agents] == [
        ("LangGraph", None),
        ("supervisor", "LangGraph"),
        ("research_expert", "supervisor"),
    ]
    assert _delegations(trace) == Counter({("LangGraph", "supervisor"): 2, ("supervisor", "research_expert"): 1})
    handoff = next(e for e in trace.events if e.type == "delegate" and e.to == "research_expert")
    assert handoff.tool == "transfer_to_research_expert"
    (returned,) = [e for e in trace.events if e.type == "return"]
    assert (returned.from_, returned.to) == ("research_expert", "supervisor")
    assert returned.content == "Lyon has about 522,000 inhabitants."
    assert [(e.agent, e.tool) for e in trace.events if e.type == "tool_call"] == [("research_expert", "web_search")]
    result = next(e for e in trace.events if e.type == "tool_result")
    assert result.content == "Lyon: 522,250 inhabitants (2021 census)."
    assert trace.costs["tokens"] == 140 + 230 + 320 + 340
    assert trace.costs["tool_calls"] == 1
    assert trace.attributes["session_id"] == "thread-7"
    assert trace.attributes["project"] == "supervisor-demo"
    edge_types = Counter(e.type for e in trace.edges)
    assert edge_types["spawn"] == 2 and edge_types["return"] >= 1
    final = [e for e in trace.events if e.agent == "supervisor" and e.attributes.get("model")][-1]
    assert final.content == "Lyon has about 522,000 inhabitants; doubled, that is 1,044,000."
    assert final.attributes["model"] == "gpt-4o-2024-08-06"


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
    assert len(trace.agents) == 1


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
    assert by_run[child["id"]].attributes["gen_ai.agent.name"] == "supervisor"


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
