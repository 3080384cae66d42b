"""The trace list's model, errors, time and range filters (saved views are their URLs) and the cost
in currency from the model price table (webapp.traces.prices, genai-prices)."""

from datetime import UTC, datetime

import pytest
from django.http import QueryDict

from swarmscope import model as core
from swarmscope.importers import SourceFile
from webapp.traces import facets, ingest, prices, services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def make(project, name, **facts):
    return Trace.objects.create(
        project=project, identity_key=f"native:{name}", source_format="native", source_id=name, name=name, **facts
    )


@pytest.fixture
def listed(project):
    make(project, "cheap", model_names=" gpt-4o-mini ", cost_usd=0.002, total_tokens=900, duration_s=3.0)
    make(project, "dear", model_names=" claude-opus-4-6 gpt-4o ", cost_usd=4.5, total_tokens=250_000, duration_s=600.0,
         error_count=2)  # fmt: skip
    make(project, "unpriced", model_names=" in-house-7b ", unknown_models="in-house-7b", duration_s=30.0)
    make(project, "chat log", duration_s=12.0)
    Trace.objects.filter(name="chat log").update(created_at=datetime(2026, 1, 2, 12, tzinfo=UTC))


def names(project, query: str) -> list[str]:
    filters = services.ListFilters.from_query(QueryDict(query))
    listed = services.list_traces([project.pk], filters=filters)
    counted = facets.facet_counts([project.pk], filters).total
    assert counted == listed.count()  # the facets' total agrees with the list under every filter
    return sorted(t.name for t in listed)


def test_model_errors_time_and_range_filters(project, listed):
    assert names(project, "model=gpt-4o") == ["dear"]  # a whole name: not gpt-4o-mini
    assert names(project, "model=gpt-4o&model=gpt-4o-mini") == ["cheap", "dear"]
    assert names(project, "errors=yes") == ["dear"]
    assert names(project, "errors=no") == ["chat log", "cheap", "unpriced"]
    assert names(project, "cost_min=0.01") == ["dear"]  # no cost (unknown or no model): not in a cost range
    assert names(project, "cost_max=1") == ["cheap"]
    assert names(project, "tok_min=900&tok_max=900") == ["cheap"]  # bounds included
    assert names(project, "dur_min=10&dur_max=60") == ["chat log", "unpriced"]
    assert names(project, "before=2026-01-02") == ["chat log"]  # the whole day
    assert names(project, "after=2026-01-03") == ["cheap", "dear", "unpriced"]
    assert names(project, "after=2026-01-03&model=gpt-4o-mini&q=cheap") == ["cheap"]


def test_malformed_filters_are_dropped_and_a_view_round_trips_through_its_url(project, listed):
    dropped = services.ListFilters.from_query(
        QueryDict("cost_min=abc&dur_max=-1&tok_min=inf&after=2026-13-01&before=yesterday&errors=maybe")
    )
    assert not dropped.active
    view = services.ListFilters.from_query(
        QueryDict("model=gpt-4o&errors=yes&after=2026-01-01&before=2026-12-31&dur_min=1.5&tok_max=1e6&cost_max=2")
    )
    assert services.ListFilters.from_query(QueryDict(view.urlencode())) == view
    assert names(project, view.urlencode()) == []


def test_filters_that_cannot_be_applied_name_their_value_and_why(project, listed):
    raw = "cost_min=abc&dur_max=-1&tok_min=inf&after=2026-13-01&before=yesterday&errors=maybe&kind=branches&sort=size"
    problems = dict(services.ListFilters.from_query(QueryDict(raw)).problems)
    assert problems == {
        "after": "'2026-13-01' is not a day (YYYY-MM-DD): not applied",
        "before": "'yesterday' is not a day (YYYY-MM-DD): not applied",
        "dur_max": "'-1' is not a number ≥ 0: not applied",
        "tok_min": "'inf' is not a number ≥ 0: not applied",
        "cost_min": "'abc' is not a number ≥ 0: not applied",
        "errors": "errors 'maybe' is not one of yes or no: not applied",
        "kind": "kind 'branches' is not one of imported, streamed, branch, episode: not applied",
        "sort": "sort 'size' is not one of name, created, events, agents, tokens, duration, reward (- first: "
        "descending): not applied",
    }
    # Bounds that exclude each other are applied (the list is empty) and said to be why.
    crossed = services.ListFilters.from_query(QueryDict("after=2026-03-01&before=2026-02-01&tok_min=10&tok_max=5"))
    assert dict(crossed.problems) == {
        "before": "2026-02-01 is before 2026-03-01: no trace can match",
        "tok_max": "the maximum 5 is below the minimum 10: no trace can match",
    }
    assert names(project, crossed.urlencode()) == []
    fine = services.ListFilters.from_query(QueryDict("after=2026-01-01&tok_min=5&tok_max=5&sort=-tokens&kind=branch"))
    assert fine.problems == ()


def test_the_list_page_says_beside_a_filter_what_it_could_not_apply(client, member, project, listed):
    client.force_login(member)
    body = client.get("/?after=2026-02-30&dur_min=10&dur_max=abc&outcome=won").content.decode()
    assert 'data-testid="filter-problem-after" role="alert">&#x27;2026-02-30&#x27; is not a day (YYYY-MM-DD)' in body
    assert 'data-testid="filter-problem-dur_max" role="alert">&#x27;abc&#x27; is not a number ≥ 0' in body
    assert 'name="after" value="" aria-invalid="true"' in body
    assert "outcome &#x27;won&#x27; is not one of success, failure, none: not applied" in body
    assert 'data-testid="filter-problem-dur_min"' not in body  # the bound that applies says nothing
    assert sorted(n for n in ("cheap", "dear", "unpriced", "chat log") if f">{n}</a>" in body) == [
        "chat log",
        "dear",
        "unpriced",
    ]  # dur_min=10 applied, the rest not
    quiet = client.get("/?dur_min=10").content.decode()
    assert 'data-testid="filter-problem' not in quiet


def test_the_list_page_keeps_a_view_in_its_links_and_shows_the_new_facets(client, member, project, listed):
    client.force_login(member)
    body = client.get("/?model=gpt-4o-mini&cost_max=1").content.decode()
    assert ">cheap</a>" in body and ">dear</a>" not in body
    assert 'data-facet="model" data-value="gpt-4o-mini"' in body and 'data-facet="errors"' in body
    assert 'name="cost_max" min="0" step="any" value="1"' in body  # the range form shows the view
    assert '<input type="hidden" name="model" value="gpt-4o-mini">' in body  # ... and keeps the rest
    assert "$0.0020" in body


def test_cost_reads_with_the_tokens_and_unknown_models_say_so(client, member, project, listed):
    client.force_login(member)
    body = client.get("/").content.decode()
    assert "$4.50" in body and "unknown model" in body
    assert services.cost_figure(Trace.objects.get(name="chat log"))["text"] == ""  # names no model: no cost
    estimate = Trace(cost_usd=0.5, cost_estimated=True, unknown_models="x-1")
    assert services.cost_figure(estimate)["text"] == "~$0.50+"


def test_the_trace_page_header_shows_the_cost_by_the_same_rules(client, member, project, listed):
    client.force_login(member)

    def header_cost(name: str) -> str:
        body = client.get(f"/traces/{Trace.objects.get(name=name).pk}/").content.decode()
        span = body.split('data-testid="trace-cost"', 1)[1].split("</span>", 1)[0]
        return span.split(">", 1)[1].removeprefix("· ").strip() if "hidden" not in span.split(">", 1)[0] else ""

    assert header_cost("dear") == "$4.50"
    assert header_cost("unpriced") == "unknown model"  # never $0 for a model without a price
    assert header_cost("chat log") == ""  # names no model: the figure is hidden
    Trace.objects.filter(name="cheap").update(cost_estimated=True)
    assert header_cost("cheap") == "~$0.0020"


def test_a_real_sessions_cost_is_its_usage_at_the_models_list_prices(project, shared_data):
    """tool_heavy.jsonl: 4 Claude Opus 4.6 calls; its usage summed by the importer (costs) at
    Anthropic's list prices per million tokens: input $5, output $25, cache read $0.50, cache write
    $6.25 (genai-prices' table, checked against anthropic.com/pricing by hand)."""
    path = shared_data / "claude-code" / "tool_heavy.jsonl"
    ingest.do_import_sources(project, [SourceFile(path.name, path.read_bytes())])
    trace = Trace.objects.get()
    costs = trace.costs
    by_hand = (
        costs["input_tokens"] * 5
        + costs["output_tokens"] * 25
        + costs["cache_read_input_tokens"] * 0.5
        + costs["cache_creation_input_tokens"] * 6.25
    ) / 1e6
    services.get_computed_metrics(trace)  # the facts are stored with the metrics (the worker's refresh)
    trace.refresh_from_db()
    assert trace.cost_usd == pytest.approx(by_hand, rel=1e-9) and not trace.cost_estimated
    assert (trace.model_names, trace.unknown_models) == (" claude-opus-4-6 ", "")
    assert names(project, "model=claude-opus-4-6&cost_min=0.1&cost_max=0.2") == [trace.name]


def test_estimated_tokens_and_unknown_models_are_marked():
    events = [
        core.Event(id="a", t=0, type="message", agent="x", content="x" * 400, attributes={"model": "gpt-4o"}),
        core.Event(id="b", t=1, type="message", agent="x", tokens=10, attributes={"model": "no-such-model-9"}),
        core.Event(id="c", t=2, type="tool_result", agent="x", attributes={"status": "error"}),
    ]
    trace = core.Trace(source_format="native", source_id="t", events=events)
    cost = prices.get_trace_cost(trace)
    # 100 estimated tokens (400 characters / 4) priced as gpt-4o output ($10 per million)
    assert cost.usd == pytest.approx(100 * 10 / 1e6) and cost.estimated
    assert cost.unknown_models == ("no-such-model-9",) and cost.models == ("gpt-4o", "no-such-model-9")
    assert prices.error_count(trace.events) == 1
    only_unknown = core.Trace(source_format="native", source_id="u", events=events[1:])
    assert prices.get_trace_cost(only_unknown).usd is None  # never 0


def test_refresh_metrics_fills_the_facts_of_traces_stored_before_them(project, fixtures):
    from django.core.management import call_command

    path = fixtures / "native_small.json"
    ingest.do_import_sources(project, [SourceFile(path.name, path.read_bytes())])
    trace = Trace.objects.get()
    services.get_computed_metrics(trace)
    Trace.objects.filter(pk=trace.pk).update(model_names="", error_count=-1)  # as migration 0013 left them
    call_command("refresh_metrics", "--project", str(project.pk))
    trace.refresh_from_db()
    assert trace.error_count == prices.error_count(services.to_core_trace(trace).events)
    assert trace.computed_metrics and trace.computed_metrics_seq == trace.seq
