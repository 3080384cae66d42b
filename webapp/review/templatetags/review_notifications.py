"""`{% notification_bell %}`: the header's link to the user's notifications with their unread
count (templates/review/bell.html; one indexed COUNT per page)."""

from django import template
from django.db import DatabaseError

from webapp.traces import access

from .. import services

register = template.Library()


@register.inclusion_tag("review/bell_link.html", takes_context=True)
def notification_bell(context) -> dict:
    """{"show": signed in, "unread": n, "user_id": id} for the bell link (its count is kept live by
    static/js/lib/notification_bell.js); nothing shown for an anonymous visitor."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"show": False, "unread": 0}
    try:
        unread = services.count_unread(user, access.project_ids_for(user))
    except DatabaseError:  # the error pages extend base.html too: a broken database must not break them
        return {"show": True, "unread": 0, "user_id": user.pk}
    return {"show": True, "unread": unread, "user_id": user.pk}
