"""The trace list's "Load sample data" action (POST): what `manage.py load_samples` does, with the
live stream in a background thread of the web process; then back to the trace list with a message."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from webapp.accounts.services import PermissionRefused

from . import samples


@login_required
@require_POST
def load_samples(request: HttpRequest):
    """Needs the reviewer or admin role in some project (a viewer gets the 403 page naming it)."""
    if not samples.can_load_samples(request.user):
        raise PermissionRefused(samples.LOAD_REFUSED)
    report = samples.do_load_samples(request.user)
    for outcome in report.failed:
        messages.error(request, outcome.lines[0])
    for note in report.notes:
        messages.error(request, f"Sample data: {note}.")
    messages.success(request, report.summary())
    return redirect("trace-list")
