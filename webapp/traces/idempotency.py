"""`Idempotency-Key` on the POSTs that create something (IETF draft-ietf-httpapi-idempotency-key-header).

A client that retries a create after a timeout or a 5xx sends the same key again: the first
request with a key stores (project, key, endpoint, SHA-256 of the caller's user id and the body
as parsed JSON, so a re-serialised body is the same request)
-> the created object's id and status, in the transaction that creates it; a repeat with the same
body answers that object with the first status and `Idempotent-Replayed: true`, creating nothing;
the same key with another body (or from another user) answers 422 naming the header. Keys live
IDEMPOTENCY_KEY_TTL; `do_delete_expired_keys` (run by the hourly `delete_expired_traces` task)
deletes older ones, and an expired key is free for a new request.

Used by `POST /api/traces/` (webapp.traces.api) and `POST /api/traces/<id>/counterfactuals/`
(webapp.counterfactuals.api): the view calls `check_key`, then, inside one `transaction.atomic()`,
`do_claim` and, once the object exists, `do_bind`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from webapp.accounts.models import Project

from .models import IdempotencyKey

HEADER = "Idempotency-Key"
#: How long a key answers for the object it created (the draft leaves it to the server; Stripe: 24 h).
IDEMPOTENCY_KEY_TTL = timedelta(hours=24)
MAX_KEY_LENGTH = 255
#: How `request_hash` writes a parsed body: one text for one JSON value, whatever its serialisation.
CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)


class KeyProblem(Exception):
    """A refused `Idempotency-Key`: `status` 400 (malformed) or 422 (reused with another request)."""

    def __init__(self, status: int, message: str):
        self.status, self.message = status, message
        super().__init__(message)

    def response(self) -> JsonResponse:
        return JsonResponse({"error": self.message, "field": HEADER}, status=self.status)


def check_key(request: HttpRequest) -> str | None:
    """The request's `Idempotency-Key` (an sf-string: the surrounding double quotes are dropped;
    a bare token is taken too), or None without one. Raises KeyProblem (400) for an empty key,
    one over MAX_KEY_LENGTH characters or one with characters outside printable ASCII."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not key or len(key) > MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in key):
        raise KeyProblem(400, f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters (a UUID, say)")
    return key


def request_hash(request: HttpRequest, body: bytes) -> str:
    """SHA-256 (hex) of the caller's user id and `body` (the request body as received, decompressed)
    as its parsed JSON: keys sorted, no insignificant whitespace, so a client that serialises the
    same document anew on a retry (another key order, spacing or escaping) sends the same request.
    A body that is not one JSON document (NDJSON, say) is hashed byte for byte."""
    token = getattr(request, "token", None)
    user_id = token.user_id if token is not None else request.user.pk
    digest = hashlib.sha256(f"{user_id}\x00".encode())
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        digest.update(body)
        return digest.hexdigest()
    # "\x01": a parsed body never hashes like a raw one
    digest.update(b"\x01")
    for chunk in CANONICAL_JSON.iterencode(doc):
        digest.update(chunk.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _find(project: Project, key: str, endpoint: str, now: datetime) -> IdempotencyKey | None:
    return IdempotencyKey.objects.filter(
        project=project, key=key, endpoint=endpoint, created_at__gte=now - IDEMPOTENCY_KEY_TTL
    ).first()


def do_claim(project: Project, key: str, endpoint: str, digest: str) -> IdempotencyKey:
    """The key's row, inside the caller's transaction: a new one (`object_id` None: the caller
    creates the object, then `do_bind`s it; a failure rolls the claim back with the transaction)
    or the stored one of an earlier request (`object_id` set: answer that object). A concurrent
    request with the key waits on the unique constraint until the first commits, then gets the
    first's row. Raises KeyProblem (422) where the stored row has another `request_hash`."""
    now = timezone.now()
    found = _find(project, key, endpoint, now)
    if found is None:
        IdempotencyKey.objects.filter(
            project=project, key=key, endpoint=endpoint, created_at__lt=now - IDEMPOTENCY_KEY_TTL
        ).delete()
        try:
            with transaction.atomic():
                return IdempotencyKey.objects.create(
                    project=project, key=key, endpoint=endpoint, request_hash=digest, created_at=now
                )
        except IntegrityError:  # a concurrent request with this key committed first
            found = _find(project, key, endpoint, now)
            if found is None:
                raise
    if found.request_hash != digest:
        raise KeyProblem(422, f"this {HEADER} was used for another request (another body or user) to {endpoint}")
    return found


def do_bind(claim: IdempotencyKey, object_id: int, status: int) -> None:
    """Record what the request holding `claim` created (in its transaction)."""
    claim.object_id, claim.status = object_id, status
    claim.save(update_fields=["object_id", "status"])


def replayed(response: JsonResponse) -> JsonResponse:
    """`response` marked as the answer of an earlier request with the same key."""
    response["Idempotent-Replayed"] = "true"
    return response


def do_delete_expired_keys(*, now: datetime | None = None) -> int:
    """Delete the keys older than IDEMPOTENCY_KEY_TTL; how many were deleted."""
    cutoff = (now or timezone.now()) - IDEMPOTENCY_KEY_TTL
    return IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()[0]
