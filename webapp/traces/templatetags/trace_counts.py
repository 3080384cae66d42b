"""`{% project_traces_link project %}`: the projects page's link to a project's trace list, with the
count that list shows and, beside it, the derived traces (branches, episodes) it hides by default
(templates/traces/project_traces_link.html; services.get_project_trace_counts)."""

from django import template

from .. import services

register = template.Library()


@register.inclusion_tag("traces/project_traces_link.html")
def project_traces_link(project) -> dict:
    """{"listed", "hidden": counts; "list_query", "hidden_query": the list's query strings}."""
    listed, hidden = services.get_project_trace_counts(project.pk)
    return {
        "listed": listed,
        "hidden": sum(hidden.values()),
        "list_query": services.ListFilters(projects=(project.pk,)).urlencode(),
        "hidden_query": services.ListFilters(projects=(project.pk,), kinds=tuple(sorted(hidden))).urlencode(),
    }
