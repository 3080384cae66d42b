"""The trace list's facet counts from the maintained counts table (webapp.traces.facets): the
database's triggers keep TraceFacetCount equal to a fresh count through every write path (create,
bulk_create, save, QuerySet.update, delete), the counts read from it equal one GROUP BY per facet
over the trace rows (the definition), and a migration that drops the triggers gets them back."""

import itertools
import json
from collections import Counter

import pytest
from django.db import connection

from swarmscope import model as core
from webapp.accounts.services import do_get_or_create_project
from webapp.traces import facets, ingest, services
from webapp.traces.models import Trace, TraceFacetCount

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def fresh_cells() -> Counter:
    """The cube counted from the trace rows now: cell -> n."""
    out: Counter = Counter()
    for t in Trace.objects.values_list("project_id", "kind", "source_format", "system", "label_summary", "outcome"):
        out[(t[0], t[1], t[2], t[3], t[4] != "", t[5])] += 1
    return out


def table_cells() -> Counter:
    rows = TraceFacetCount.objects.filter(n__gt=0).values_list(
        "project_id", "kind", "source_format", "system", "labelled", "outcome", "n"
    )
    assert not TraceFacetCount.objects.filter(n__lt=0).exists()
    return Counter({row[:6]: row[6] for row in rows})


def by_definition(project_ids, filters) -> dict:
    """Total and facet counts as one GROUP BY per facet over the trace rows."""
    grouped = {
        "projects": "project_id",
        "kinds": "kind",
        "formats": "source_format",
        "systems": "system",
        "outcome": "outcome",
    }
    out = {"total": services.list_traces(project_ids, filters=filters).count()}
    for name, column in grouped.items():
        qs = services._filtered(project_ids, filters, without=name)
        out[name] = Counter(dict(qs.order_by().values_list(column).annotate(n=services.Count("id"))))
    qs = services._filtered(project_ids, filters, without="label")
    out["label"] = Counter({"yes": qs.exclude(label_summary="").count(), "no": qs.filter(label_summary="").count()})
    return {k: (+v if isinstance(v, Counter) else v) for k, v in out.items()}


def as_dict(counts: facets.FacetCounts) -> dict:
    return {"total": counts.total, **{k: +v for k, v in counts.by_facet.items()}}


def grow(projects, n, prefix="scale"):
    rows = []
    for i in range(n):
        reward = None if i % 3 == 0 else (i % 5) / 2 - 1
        rows.append(
            Trace(
                project=projects[i % len(projects)],
                identity_key=f"{prefix}:{i}",
                source_format=("native", "whowhen", "otlp")[i % 3],
                source_id=str(i),
                name=f"trace {i} {'WebSurfer' if i % 7 == 0 else ''}",
                system=f"system-{i % 4}",
                kind=Trace.KINDS[i % 4],
                derived_from=f"trace:{i % 3}" if i % 4 == 2 else "",
                session_id=f"s{i % 2}",
                reward=reward,
                outcome="" if reward is None else "success" if reward > 0 else "failure",
                label_summary="mistake_agent=x" if i % 5 == 0 else "",
            )
        )
    Trace.objects.bulk_create(rows)


FILTERS = [
    services.ListFilters(),
    services.ListFilters(formats=("whowhen",), label="yes"),
    services.ListFilters(systems=("system-1", "system-2"), outcome="success"),
    services.ListFilters(kinds=("branch", "episode"), outcome="none"),
    services.ListFilters(kinds=Trace.KINDS, label="no", formats=("otlp", "native")),
    services.ListFilters(query="WebSurfer"),  # these three are counted by one GROUP BY, not the table
    services.ListFilters(session="s1", systems=("system-0",)),
    services.ListFilters(derived_from="trace:1"),
]


def test_triggers_keep_the_counts_through_every_write_path(fixtures):
    assert facets.triggers_installed(), f"no facet count triggers on {connection.vendor}"
    a, b = do_get_or_create_project("Scale A"), do_get_or_create_project("Scale B")
    grow([a, b], 120)
    # a real trace through the ingest path (create + save)
    native = core.trace_from_dict(json.loads((fixtures / "native_small.json").read_text()))
    ingest.do_ingest(a, native)
    assert table_cells() == fresh_cells()

    one = Trace.objects.filter(project=a).order_by("pk").first()
    one.label_summary, one.kind = "mistake_step=3", Trace.BRANCH
    one.save()
    Trace.objects.filter(project=b, system="system-1").update(system="system-9", outcome="failure")
    Trace.objects.filter(project=a, source_format="otlp").update(project=b)
    Trace.objects.filter(name__contains="WebSurfer").delete()
    Trace.objects.filter(project=b).update(event_count=5)  # no faceted column: the cells stay
    assert table_cells() == fresh_cells()
    assert facets.table_total([a.pk, b.pk]) == Trace.objects.count()


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: f.urlencode() or "default")
def test_counts_equal_one_group_by_per_facet(filters, monkeypatch):
    a, b, c = (do_get_or_create_project(f"Facets {x}") for x in "ABC")
    grow([a, b, c], 200)
    ids = [a.pk, b.pk]  # c is someone else's: never counted
    for chosen in ((), (b.pk,), (b.pk, c.pk)):
        f = services.ListFilters(**{**filters.__dict__, "projects": chosen})
        counted = facets.facet_counts(ids, f)
        assert counted.source == ("table" if not (f.query or f.session or f.derived_from) else "query")
        assert as_dict(counted) == by_definition(ids, f)
        monkeypatch.setattr(facets, "triggers_installed", lambda conn=None: False)
        grouped = facets.facet_counts(ids, f)
        monkeypatch.undo()
        assert grouped.source == "query" and as_dict(grouped) == as_dict(counted)


def test_list_page_counts_and_facets_from_the_table(client, member, project):
    grow([project], 90)
    client.force_login(member)
    page = client.get("/", {"format": "whowhen", "label": "yes"})
    assert page.status_code == 200
    chosen = services.ListFilters(formats=("whowhen",), label="yes")
    assert page.context["page"].paginator.count == services.list_traces([project.pk], filters=chosen).count() > 0
    systems = {e["value"]: e["count"] for e in page.context["facets"]["systems"]}
    assert systems == dict(by_definition([project.pk], chosen)["systems"])


def test_a_lost_trigger_is_put_back_with_a_recount(project):
    grow([project], 40)
    with connection.cursor() as cursor:
        facets.drop_triggers(cursor.execute, connection.vendor)
    assert not facets.triggers_installed()
    grow([do_get_or_create_project("While dropped")], 10)  # not counted: no triggers
    assert table_cells() != fresh_cells()
    # without triggers the list still counts right, by grouping the rows
    assert facets.facet_counts([project.pk], services.ListFilters()).source == "query"
    facets.ensure_triggers()
    assert facets.triggers_installed() and table_cells() == fresh_cells()
    grow([project], 1, prefix="after")
    assert table_cells() == fresh_cells()


def test_every_combination_of_two_filters_has_one_cell_pass():
    # the one-pass rule: a cell failing two facets' filters counts for neither facet
    p = do_get_or_create_project("Pairs")
    grow([p], 60)
    for fa, fb in itertools.combinations(
        [("formats", ("otlp",)), ("systems", ("system-3",)), ("label", "yes"), ("outcome", "failure")], 2
    ):
        f = services.ListFilters(**{fa[0]: fa[1], fb[0]: fb[1]})
        assert as_dict(facets.facet_counts([p.pk], f)) == by_definition([p.pk], f)
