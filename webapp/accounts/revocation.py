"""Tell open websockets that a caller's access changed, so they re-check it and close at once.

Every live socket (webapp.web.sockets.SequencedConsumer) joins the channel group of its user and,
when it authenticated with `?token=`, the group of its token. A write that can take access away (a
token revoked, a member removed or their role changed, a user deactivated, deleted or logged out) sends
`{"type": "access.changed"}` to those groups after it commits; each socket in them re-reads its
caller's rights from the database and closes (4401 or 4404, with a reason) when they are gone.
The signals below catch every path (services, the admin site, `user.save()` from a shell); bulk
`QuerySet.update()` calls bypass signals, so services that use one call `notify_access_changed`.

Sending never raises: a channel layer that is down must not fail a committed revocation, and
sockets re-check on their own before each delivery at least every
`SequencedConsumer.RECHECK_S` seconds, so a lost message delays the close by at most that.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model, user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from .models import ApiToken, Membership

log = logging.getLogger(__name__)

#: The group message type; consumers handle it in `access_changed`.
ACCESS_CHANGED = "access.changed"


def user_access_group(user_id: int) -> str:
    return f"access-user-{user_id}"


def token_access_group(token_id: int) -> str:
    return f"access-token-{token_id}"


def _send(groups: list[str]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": ACCESS_CHANGED})
        except Exception:  # noqa: BLE001 - a broken layer must not break a committed revocation
            log.warning("could not tell the group %s that access changed", group, exc_info=True)


def notify_access_changed(user_ids: Iterable[int] = (), token_ids: Iterable[int] = ()) -> None:
    """After the current transaction commits (at once outside one), tell the open sockets of these
    users and tokens to re-check their rights."""
    groups = [user_access_group(u) for u in set(user_ids)] + [token_access_group(t) for t in set(token_ids)]
    if groups:
        transaction.on_commit(lambda: _send(groups))


def _user_saved(sender, instance, created, update_fields=None, **kwargs):
    if not created and not instance.is_active and (update_fields is None or "is_active" in update_fields):
        notify_access_changed(user_ids=[instance.pk])


def _user_deleted(sender, instance, **kwargs):
    notify_access_changed(user_ids=[instance.pk])


def _membership_changed(sender, instance, created=False, **kwargs):
    if not created:
        notify_access_changed(user_ids=[instance.user_id])


def _token_saved(sender, instance, created, **kwargs):
    if instance.revoked_at is not None:
        notify_access_changed(token_ids=[instance.pk])


def _token_deleted(sender, instance, **kwargs):
    notify_access_changed(token_ids=[instance.pk])


def _logged_out(sender, request, user, **kwargs):
    if user is not None:
        notify_access_changed(user_ids=[user.pk])


def connect_signals() -> None:
    """Called once from AccountsConfig.ready()."""
    user_model = get_user_model()
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="access-user-saved")
    post_delete.connect(_user_deleted, sender=user_model, dispatch_uid="access-user-deleted")
    post_save.connect(_membership_changed, sender=Membership, dispatch_uid="access-membership-saved")
    post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="access-membership-deleted")
    post_save.connect(_token_saved, sender=ApiToken, dispatch_uid="access-token-saved")
    post_delete.connect(_token_deleted, sender=ApiToken, dispatch_uid="access-token-deleted")
    user_logged_out.connect(_logged_out, dispatch_uid="access-user-logged-out")
