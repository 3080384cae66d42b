"""Who may read which trace: project membership for users, the token's project for API tokens.

Unknown and foreign objects look the same (None -> 404), so ids cannot be probed.
"""

from __future__ import annotations

from webapp.accounts.models import ApiToken
from webapp.accounts.services import check_token, project_ids_for

from .models import Trace


def get_trace_for(
    trace_id: int, *, user=None, raw_token: str | None = None, token: ApiToken | None = None
) -> Trace | None:
    """The trace if the user (or token) may read it, else None."""
    if token is None and raw_token:
        token = check_token(raw_token)
    ids = project_ids_for(user, token)
    return Trace.objects.select_related("project").filter(pk=trace_id, project_id__in=ids).first()
