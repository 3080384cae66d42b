"""Failed-login throttle: counters in Django's cache (Redis in production, shared by every web
process), one per user name and one per client address.

After SWARMSCOPE_LOGIN_FAILURES failed logins for a user name (compared ignoring case) within
SWARMSCOPE_LOGIN_WINDOW_S seconds of the first of them, logins for that name are refused until the
window ends. A client address (REMOTE_ADDR; Daphne sets it from X-Forwarded-For behind a trusted
proxy) is delayed, never locked: past SWARMSCOPE_LOGIN_ADDRESS_FAILURES failures in its window,
a login from it must wait SWARMSCOPE_LOGIN_ADDRESS_DELAY_S seconds after its last failure, doubled
with each further failure up to SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S, so guessing from one address
slows to one try a minute while the others behind that address wait seconds, not the window
(an attempt refused for the delay is not counted: it checked no password). Refused: the login page
answers 429 saying when to try again, and
`ThrottledModelBackend` refuses every other login form (the admin's) without checking the password.
Failures are counted from Django's `user_login_failed` signal; a successful login clears its user
name's counter (not the address's, so a caller's own account cannot reset it). A cache that is down
lets logins through.

The address limit defaults to ADDRESS_FACTOR times the user name's: many users share an address (on
a local install every browser is 127.0.0.1, behind a proxy that does not forward theirs every
client is the proxy), so a few wrong passwords by anyone there must not lock the others out, while
guessing through many user names from one address still stops (django-axes keys its lockout by the
user name and address together for the same reason).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

from django.conf import settings
from django.contrib.auth import user_logged_in, user_login_failed
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.exceptions import PermissionDenied

log = logging.getLogger(__name__)

#: The address limit, where SWARMSCOPE_LOGIN_ADDRESS_FAILURES is unset: this many user names' worth.
ADDRESS_FACTOR = 10


def _limits() -> tuple[int, int]:
    """(failures per user name, failures per address); 0 is no limit."""
    per_user = settings.SWARMSCOPE_LOGIN_FAILURES
    per_address = getattr(settings, "SWARMSCOPE_LOGIN_ADDRESS_FAILURES", None)
    return per_user, ADDRESS_FACTOR * per_user if per_address is None else per_address


def _keys(username: str | None, address: str | None) -> list[tuple[str, int]]:
    """The counters of a login for `username` from `address`, each with its limit (0s left out)."""
    per_user, per_address = _limits()
    keys = []
    if username and per_user > 0:
        digest = hashlib.sha256(username.casefold().encode("utf-8", "replace")).hexdigest()
        keys.append((f"swarmscope:login-failures:user:{digest}", per_user))
    if address and per_address > 0:
        keys.append((f"swarmscope:login-failures:address:{address}", per_address))
    return keys


def client_address(request) -> str | None:
    """The caller's address (REMOTE_ADDR), or None without a request (e.g. `Client.login`)."""
    return (request.META.get("REMOTE_ADDR") or None) if request is not None else None


def _wait(key: str, limit: int, now: float) -> float:
    """Seconds a login must wait for the counter `key` (0: none): a user name's until its window
    ends once over `limit`; an address's the delay after its last failure (`_address_delay`)."""
    count = cache.get(key) or 0
    if count < limit:
        return 0.0
    if ":address:" in key:
        return (cache.get(f"{key}:last") or now) + _address_delay(count - limit) - now
    return (cache.get(f"{key}:until") or now + 1) - now


def _address_delay(over: int) -> float:
    """The delay of an address `over` failures past its limit: SWARMSCOPE_LOGIN_ADDRESS_DELAY_S,
    doubled per failure, at most SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S."""
    base, most = settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_S, settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S
    return min(most, base * 2 ** min(over, 32))


def check_login_allowed(username: str | None, address: str | None, *, now: float | None = None) -> int | None:
    """None when a login for `username` from `address` may be tried, else the whole seconds
    (>= 1) to wait: until the user name's window ends, or the address's delay. Counts nothing."""
    now = time.time() if now is None else now
    wait = 0.0
    try:
        for key, limit in _keys(username, address):
            wait = max(wait, _wait(key, limit, now))
    except Exception:  # noqa: BLE001 - a broken cache must not lock everybody out
        log.warning("login throttle cache unavailable; login let through", exc_info=True)
        return None
    return max(1, math.ceil(wait)) if wait > 0 else None


def do_count_login_failure(username: str | None, address: str | None, *, now: float | None = None) -> None:
    """Count one failed login for `username` and from `address` (a window starts at the first); an
    address waiting out its delay is not counted (no password was checked)."""
    window = settings.SWARMSCOPE_LOGIN_WINDOW_S
    now = time.time() if now is None else now
    try:
        for key, limit in _keys(username, address):
            if ":address:" in key:
                if _wait(key, limit, now) > 0:
                    continue
                cache.set(f"{key}:last", now, timeout=window)
            if cache.add(key, 0, timeout=window):
                cache.set(f"{key}:until", now + window, timeout=window)
            cache.incr(key)
    except Exception:  # noqa: BLE001
        log.warning("login throttle cache unavailable; failure not counted", exc_info=True)


def do_clear_login_failures(username: str) -> None:
    """Forget the failed logins of `username` (after a successful login)."""
    try:
        cache.delete_many([k for key, _limit in _keys(username, None) for k in (key, f"{key}:until")])
    except Exception:  # noqa: BLE001
        log.warning("login throttle cache unavailable; failures not cleared", exc_info=True)


def retry_message(seconds: int) -> str:
    """What the login page says while refusing: when to try again, in minutes (or seconds)."""
    when = f"{math.ceil(seconds / 60)} minute(s)" if seconds >= 60 else f"{seconds} second(s)"
    return f"Too many failed logins for this user name or from this address. Try again in {when}."


class ThrottledModelBackend(ModelBackend):
    """Django's ModelBackend, refusing (PermissionDenied: no other backend is tried, the password is
    not checked) while the user name or the address is over the failed-login limit."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        name = username if username is not None else kwargs.get(self._username_field())
        if check_login_allowed(name, client_address(request)) is not None:
            raise PermissionDenied("too many failed logins")
        return super().authenticate(request, username=username, password=password, **kwargs)

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model  # noqa: PLC0415 - the user model is swappable

        return get_user_model().USERNAME_FIELD


def _on_login_failed(sender, credentials, request=None, **kwargs) -> None:
    do_count_login_failure(credentials.get("username"), client_address(request))


def _on_logged_in(sender, request, user, **kwargs) -> None:
    do_clear_login_failures(user.get_username())


def connect_signals() -> None:
    user_login_failed.connect(_on_login_failed, dispatch_uid="swarmscope-login-throttle-failed")
    user_logged_in.connect(_on_logged_in, dispatch_uid="swarmscope-login-throttle-logged-in")
