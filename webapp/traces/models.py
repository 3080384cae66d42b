"""Trace, Agent, Event, Edge and Label rows. Every row carries the `seq` of the batch that last
wrote it, so the live protocol's "everything after seq N" is a filter (swarmscope.protocol)."""

from django.db import models

from webapp.accounts.models import Project


class Trace(models.Model):
    #: How the trace came in (`kind`): imported from a file, streamed (the API, OTLP, a live
    #: sample), a counterfactual's branch trace, or a training run's sample episode. Branches and
    #: episodes are derived traces: the trace list hides them unless asked (`kind=branch`).
    IMPORTED, STREAMED, BRANCH, EPISODE = "imported", "streamed", "branch", "episode"
    KINDS = (IMPORTED, STREAMED, BRANCH, EPISODE)
    DERIVED_KINDS = (BRANCH, EPISODE)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="traces")
    identity_key = models.CharField(max_length=400)
    source_format = models.CharField(max_length=40)
    source_id = models.CharField(max_length=300)
    name = models.CharField(max_length=500, blank=True)
    system = models.CharField(max_length=200, blank=True)
    topology = models.CharField(max_length=40, default="unknown")
    task_id = models.CharField(max_length=300, blank=True)
    session_id = models.CharField(
        max_length=300,
        blank=True,
        help_text="attributes['session_id'] (a conversation, Claude Code session, Codex thread)",
    )
    attributes = models.JSONField(default=dict)
    rewards = models.JSONField(default=dict)
    costs = models.JSONField(default=dict)
    metrics = models.JSONField(default=dict, help_text="metrics as given by the source; never overwritten")
    computed_metrics = models.JSONField(default=dict)
    computed_metrics_seq = models.BigIntegerField(default=-1)
    seq = models.BigIntegerField(default=0)
    reset_seq = models.BigIntegerField(default=0, help_text="seq of the last rebuild; older clients need a snapshot")
    event_count = models.IntegerField(default=0)
    agent_count = models.IntegerField(default=0)
    total_tokens = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="measured token usage (swarmscope.tokens.trace_usage); null when the source measured none",
    )
    estimated_tokens = models.BigIntegerField(
        default=0, help_text="characters / 4 of the events without measured tokens; never part of total_tokens"
    )
    duration_s = models.FloatField(default=0.0)
    reward = models.FloatField(null=True, blank=True)
    label_summary = models.CharField(max_length=500, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    spans_pending = models.BooleanField(default=False, help_text="stored spans not yet derived (OTLP)")
    staged_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="last chunk of a batch being staged (rows with seq > seq, unpublished); null when none",
    )
    kind = models.CharField(max_length=16, default=IMPORTED, choices=[(k, k) for k in KINDS])
    outcome = models.CharField(
        max_length=8,
        blank=True,
        help_text="'success' (reward > 0, else is_correct), 'failure' (reward <= 0, else not correct) or ''; by save()",
    )
    derived_from = models.CharField(
        max_length=64,
        blank=True,
        help_text="what a derived trace belongs to: 'trace:<id>' (a branch's parent) or 'run:<id>' (an episode's run)",
    )
    # The list's facts of a trace (webapp.traces.prices), stored with its computed metrics.
    model_names = models.CharField(
        max_length=500, blank=True, help_text="the models its events name, ' a b ' (space around each)"
    )
    error_count = models.IntegerField(default=0, help_text="events with an error status")
    cost_usd = models.FloatField(null=True, blank=True, help_text="USD of its priced LLM calls; null: none priced")
    cost_estimated = models.BooleanField(default=False, help_text="the cost prices estimated tokens")
    unknown_models = models.CharField(max_length=300, blank=True, help_text="models the price table lacks")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "identity_key"], name="trace_identity")]
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            models.Index(fields=["project", "name"]),
            models.Index(fields=["project", "session_id"]),
            # the trace list's facets and default order (webapp.traces.services.list_traces)
            models.Index(fields=["project", "kind", "-created_at"], name="trace_kind_created"),
            models.Index(fields=["project", "kind", "source_format"], name="trace_kind_format"),
            models.Index(fields=["project", "kind", "system"], name="trace_kind_system"),
            models.Index(fields=["project", "kind", "label_summary"], name="trace_kind_labels"),
            models.Index(fields=["project", "kind", "outcome"], name="trace_kind_outcome"),
            models.Index(fields=["derived_from"], name="trace_derived_from"),
            models.Index(fields=["project", "derived_from", "kind"], name="trace_derived_kind"),
            models.Index(fields=["project", "updated_at"], name="trace_updated"),
        ]

    def __str__(self) -> str:
        return self.name or self.identity_key

    def save(self, *args, **kwargs):
        """Keeps `session_id` equal to `attributes["session_id"]` (importers set the attribute) and
        `outcome` to what `reward` and `attributes["is_correct"]` say."""
        self.session_id = session_key(self.attributes)
        self.outcome = outcome_of(self.reward, self.attributes)
        super().save(*args, **kwargs)


def session_key(attributes: dict) -> str:
    """The session a trace belongs to: `attributes["session_id"]` as text, at most 300 chars."""
    value = attributes.get("session_id") if isinstance(attributes, dict) else None
    return str(value)[:300] if value not in (None, "") else ""


def outcome_of(reward: float | None, attributes: dict) -> str:
    """A trace's outcome for the list's facet: by its reward (> 0: "success", else "failure"), else
    by `attributes["is_correct"]` (Who&When), else ""."""
    if reward is not None:
        return "success" if reward > 0 else "failure"
    correct = attributes.get("is_correct") if isinstance(attributes, dict) else None
    return {True: "success", False: "failure"}.get(correct, "") if isinstance(correct, bool) else ""


class Agent(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=300)
    role = models.CharField(max_length=200, null=True, blank=True)
    parent = models.CharField(max_length=300, null=True, blank=True)
    spawned_at = models.FloatField(null=True, blank=True)
    despawned_at = models.FloatField(null=True, blank=True)
    system_prompt = models.TextField(null=True, blank=True)
    attributes = models.JSONField(default=dict)
    seq = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "name"], name="agent_name")]
        indexes = [models.Index(fields=["trace", "seq"])]


class Event(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=300)
    position = models.IntegerField(help_text="order of arrival within the trace")
    t = models.FloatField()
    t_end = models.FloatField(null=True, blank=True)
    type = models.CharField(max_length=40)
    agent = models.CharField(max_length=300)
    role = models.CharField(max_length=200, null=True, blank=True)
    from_agent = models.CharField(max_length=300, null=True, blank=True)
    to = models.CharField(max_length=300, null=True, blank=True)
    tool = models.CharField(max_length=300, null=True, blank=True)
    content = models.TextField(null=True, blank=True)
    content_ref = models.CharField(max_length=500, null=True, blank=True)
    tokens = models.IntegerField(null=True, blank=True)
    trusted = models.BooleanField(null=True, blank=True)
    attributes = models.JSONField(default=dict)
    seq = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "event_id"], name="event_identity")]
        indexes = [models.Index(fields=["trace", "seq"]), models.Index(fields=["trace", "position"])]


class Edge(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="edges")
    src = models.CharField(max_length=300)
    dst = models.CharField(max_length=300)
    type = models.CharField(max_length=40)
    seq = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "src", "dst", "type"], name="edge_identity")]
        indexes = [models.Index(fields=["trace", "seq"])]


class Label(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="labels")
    key = models.CharField(max_length=200)
    value = models.JSONField(null=True)
    event_id = models.CharField(max_length=300, null=True, blank=True)
    agent = models.CharField(max_length=300, null=True, blank=True)
    source = models.CharField(max_length=200, null=True, blank=True)
    seq = models.BigIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["trace", "seq"])]


class StoredSpan(models.Model):
    """One span of a trace that arrives over OTLP, as decoded (`Span.to_dict`) and redacted.

    Exporters send finished spans in batches, children before their parents, so the orchestration
    structure is re-derived from all of a trace's spans when more arrive; a re-sent span (same
    span id) is stored once.
    """

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="spans")
    span_id = models.CharField(max_length=16)
    data = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "span_id"], name="span_identity")]


class StoredLogRecord(models.Model):
    """One OTLP log record (`otlp.LogRecord.to_dict`, redacted) of a project, kept as it came.

    GenAI content events (`gen_ai.user.message`, `gen_ai.choice`, ...) arrive on the logs signal
    beside the spans they belong to, before or after them. A record with a trace id belongs to
    that trace's row (created empty when the record comes first) and is added to its span as a
    span event whenever the trace is rebuilt (`span_ingest`), so it applies once the span arrives;
    a record without a trace id has `trace` None and is only kept. `digest` (SHA-256 of the stored
    form) makes an exporter's retry store nothing new.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, null=True, blank=True, related_name="log_records")
    span_id = models.CharField(max_length=16, blank=True, help_text="hex; empty when the record names no span")
    digest = models.CharField(max_length=64)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "digest"], name="log_record_identity")]
        indexes = [models.Index(fields=["trace", "span_id"])]


class TraceFacetCount(models.Model):
    """How many traces of `project` share one combination of the trace list's faceted columns
    (`labelled`: label_summary is not empty); read for the facets' counts and the list's total
    (webapp.traces.facets) instead of grouping every trace row.

    Kept by database triggers on the trace table, so every write path counts (save, bulk_create,
    update, delete, raw SQL): SQLite and PostgreSQL, migration 0007_trace_list_indexes. Rows whose
    `n` fell to 0 stay (and are skipped when read)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16)
    source_format = models.CharField(max_length=40)
    system = models.CharField(max_length=200)
    labelled = models.BooleanField()
    outcome = models.CharField(max_length=8)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "source_format", "system", "labelled", "outcome"], name="trace_facet_cell"
            )
        ]


class IdempotencyKey(models.Model):
    """One `Idempotency-Key` request header (IETF draft-ietf-httpapi-idempotency-key-header) of a
    POST that creates something: `POST /api/traces/` (a trace) and `POST
    /api/traces/<id>/counterfactuals/` (a job). `endpoint` names the call ("POST /api/traces/");
    `request_hash` is the SHA-256 of the caller's user id and the request body; `object_id` the id
    of what the first request created (null only inside that request's transaction) and `status`
    its HTTP status. Unique per (project, key, endpoint), so two concurrent retries cannot both
    create; kept IDEMPOTENCY_KEY_TTL (24 h), then deleted (webapp.traces.idempotency)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    endpoint = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    object_id = models.BigIntegerField(null=True, blank=True)
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key", "endpoint"], name="idempotency_key_once_per_endpoint")
        ]
