"""Who may read which trace: project membership for users, the token's project for API tokens.

Unknown and foreign objects look the same (None -> 404), so ids cannot be probed.
"""

from __future__ import annotations

from webapp.accounts.models import ApiToken
from webapp.accounts.services import check_token, list_projects_of

from .models import Trace


def project_ids_for(user=None, token: ApiToken | None = None) -> list[int]:
    if token is not None:
        return [token.project_id]
    if user is None or not user.is_authenticated:
        return []
    return [p.pk for p in list_projects_of(user)]


def get_trace_for(trace_id: int, *, user=None, raw_token: str | None = None,
                  token: ApiToken | None = None) -> Trace | None:
    """The trace if the user (or token) may read it, else None."""
    if token is None and raw_token:
        token = check_token(raw_token)
    ids = project_ids_for(user, token)
    return Trace.objects.select_related("project").filter(pk=trace_id, project_id__in=ids).first()
