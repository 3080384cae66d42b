"""The bundled sample data (`samples/` in the repository): `manage.py load_samples` and the trace
list's "Load sample data" action both call `do_load_samples`.

It imports every file under `samples/` into the project SAMPLES_PROJECT (created if absent; the
user who asked becomes a member of it, and superusers read every project anyway), then (re)starts
the live part: the first LIVE_EPISODES traces of SwarmSim's pivot-12 suite, streamed as live traces
so the first screen moves. Importing is idempotent (a file stored already adds nothing); a live
trace nobody has worked on is emptied in place (same id: open pages and links stay valid, and
their viewers get a fresh snapshot) and streamed again, so running it twice changes nothing but
restarting them. One with user work attached (USER_WORK: a counterfactual job, an attribution, a
review status, a comment, a mistake label or a label) is kept, with that work: it is streamed into
only when it lacks events of its episode (a re-sent event is a no-op, so only those are added).

The stream runs in a background thread of the calling process for a bounded time (each episode is
stretched over `seconds`, SWARMSCOPE_SAMPLE_STREAM_S = 40 by default), writing through `ingest.do_ingest(live=True)`
as the REST API does, so viewers get the deltas over their websockets, and closes each stream at
its end (`webapp.traces.live.do_close_stream`, as the client's `TraceStream.close()`). A later
call stops the previous stream of the same process first. SwarmSim is reached by its dotted path (Django imports
`trainer` only through such paths, as the counterfactual backends do).
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections

from swarmscope import model as core
from swarmscope.importers import SourceFile
from swarmscope.importers.files import iter_files
from webapp.accounts.models import Membership, Project
from webapp.accounts.services import WRITE_ROLE, do_add_member, do_get_or_create_project, has_role, list_projects_of

from . import datacare, ingest
from .live import do_close_stream
from .models import Trace

log = logging.getLogger(__name__)

#: Where the bundled files are, and the project they go to.
SAMPLES_DIR = Path(settings.BASE_DIR) / "samples"
SAMPLES_PROJECT = "Samples"
#: SwarmSim, by dotted path: `pivot12_case(k)` builds trace k of the pivot-12 suite, the stream
#: module turns an episode into the events, edges and attributes that `python -m trainer.sim.stream` sends.
PIVOT12_CASE = "trainer.sim.suites.pivot12_case"
SIM_STREAM = "trainer.sim.stream"
#: The pivot-12 traces streamed live (its 12 messages carry planted effects: What if removed? and
#: Attribute this trace have known answers there).
LIVE_EPISODES = (0, 1, 2)
#: How often the live stream sends (its length is SWARMSCOPE_SAMPLE_STREAM_S).
TICK_S = 0.25
#: What users add to a trace, as its reverse relations: a live sample trace with any of them is kept
#: by a restart rather than emptied.
USER_WORK = ("counterfactual_jobs", "attributions", "review", "comments", "mistake_labels", "labels")


def sample_sources(root: Path = SAMPLES_DIR) -> list[SourceFile]:
    """The bundled trace files (every file under `root` but the Markdown that describes them)."""
    if not root.is_dir():
        return []
    return [
        SourceFile(name=str(p.relative_to(root.parent)), data=p.read_bytes())
        for p in iter_files([root])
        if p.suffix.lower() != ".md"
    ]


def default_user():
    """Who `manage.py load_samples` loads for when no user is named: the first superuser, else the
    first user; None when there is none yet (superusers read every project anyway)."""
    users = get_user_model().objects.order_by("pk")
    return users.filter(is_superuser=True).first() or users.first()


def do_get_samples_project(user=None) -> Project:
    """The Samples project, with `user` (when given) a member: its admin when they are the first
    member, else a reviewer (so they may try What if removed? on the samples). An existing
    membership is kept as it is."""
    project = do_get_or_create_project(SAMPLES_PROJECT)
    if (
        user is not None
        and user.is_authenticated
        and not Membership.objects.filter(project=project, user=user).exists()
    ):
        first = not project.memberships.exists()
        do_add_member(project, user, Membership.Role.ADMIN if first else Membership.Role.REVIEWER)
    return project


#: Why the trace list's "Load sample data" is disabled for a user who may only read.
LOAD_REFUSED = "Loading sample data needs the reviewer or admin role in a project"


def can_load_samples(user) -> bool:
    """Whether `user` may load the samples from the trace list: a superuser, or WRITE_ROLE (reviewer
    or admin) in some project, the rule of every other write from a page."""
    if not user.is_authenticated:
        return False
    return user.is_superuser or any(has_role(user, p.pk, WRITE_ROLE) for p in list_projects_of(user))


# --- the live SwarmSim stream ------------------------------------------------------------------


@dataclass
class _Live:
    """One live episode: its trace row and its payload, (event dict, edges after it) in time order."""

    trace: Trace
    payload: list[tuple[dict[str, Any], list[dict[str, str]]]]
    scale: float  # real seconds per simulated second


def _sim() -> tuple[Callable, Any]:
    return importlib.import_module(PIVOT12_CASE.rsplit(".", 1)[0]).pivot12_case, importlib.import_module(SIM_STREAM)


@functools.cache
def _live_fragments() -> list[tuple[core.Trace, list]]:
    """The live traces' headers (as `trainer.sim.stream` creates them) and payloads (built once per
    process: a pivot-12 case solves its coalition values; callers only read them)."""
    pivot12_case, stream = _sim()
    found = []
    for k in LIVE_EPISODES:
        episode = pivot12_case(k).episode
        header = core.Trace(
            source_format="api",
            source_id=episode.trace.source_id,
            name=f"{episode.trace.name} (live sample)",
            system=episode.trace.system,
            attributes={**stream.trace_attributes(episode), "sample": "swarmsim-pivot-12"},
            rewards=dict(episode.trace.rewards),
            costs=dict(episode.trace.costs),
        )
        found.append((header, stream.trace_payload(episode)))
    return found


def live_identity_keys() -> list[str]:
    """Identity keys of the live sample traces (what a restart empties, but those with user work)."""
    return [header.identity_key for header, _ in _live_fragments()]


def _lacking(row: Trace, payload: list[tuple[dict[str, Any], list[dict[str, str]]]]) -> int:
    """How many events of `payload` trace `row` has not stored."""
    wanted = {event["id"] for event, _ in payload}
    return len(wanted) - row.events.filter(event_id__in=wanted).count()


def has_user_work(trace: Trace) -> bool:
    """Whether users have added anything of USER_WORK to `trace`."""
    return any(Trace.objects.filter(pk=trace.pk, **{f"{name}__isnull": False}).exists() for name in USER_WORK)


class LiveStream:
    """The live part of the samples, streamed by a background thread (or inline with `run()`).

    On construction each live trace is made empty (created, or a stored one reset in place,
    `datacare.do_reset_trace`: same id, so open pages and links stay valid), so they are on the
    trace list at once; the thread then sends each episode's events in time order, stretched over
    `seconds`, in TICK_S batches, and ends by itself. `stop()` ends it early. A stored one with user
    work is `kept` as it is: streamed into only when it lacks events of its episode (`filled`: a
    re-sent event is a no-op, so only those it lacks are added), else only its stream is closed."""

    def __init__(self, project: Project, seconds: float):
        self.seconds = max(0.0, seconds)
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.episodes: list[_Live] = []
        self.kept: list[Trace] = []
        #: Kept trace pk -> how many events of its episode it lacks (those streamed into it).
        self.filled: dict[int, int] = {}
        for header, payload in _live_fragments():
            row = Trace.objects.filter(project=project, identity_key=header.identity_key).first()
            if row is not None and has_user_work(row):
                self.kept.append(row)
                lacking = _lacking(row, payload)
                if not lacking:
                    do_close_stream(row.pk)  # a stream cut short before its end leaves no Live badge
                    continue
                self.filled[row.pk] = lacking
            else:
                if row is not None:
                    row = datacare.do_reset_trace(row)
                row = ingest.do_ingest(project, header, trace=row, live=True).trace
            span = max((event["t"] for event, _ in payload), default=0.0)
            self.episodes.append(_Live(row, payload, self.seconds / span if span > 0 else 0.0))

    @property
    def traces(self) -> list[Trace]:
        """The traces streamed into: the episodes streamed anew and the kept traces being filled in."""
        return [live.trace for live in self.episodes]

    @property
    def restreamed(self) -> list[Trace]:
        """The traces emptied (or created) and streamed anew."""
        return [live.trace for live in self.episodes if live.trace.pk not in self.filled]

    def kept_note(self) -> str:
        """What was done to the kept traces, in words ("" when none was kept)."""
        parts = []
        for trace in self.kept:
            lacking = self.filled.get(trace.pk)
            done = f"gets the {lacking} events of its episode it lacks" if lacking else "stays as it was"
            parts.append(f"trace {trace.pk} has work done on it and {done}")
        return "; ".join(parts)

    def start(self) -> LiveStream:
        self.thread = threading.Thread(target=self._run_and_close, name="swarmscope-sample-stream", daemon=True)
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background stream to end; whether it has."""
        if self.thread is not None:
            self.thread.join(timeout)
            return not self.thread.is_alive()
        return True

    def _run_and_close(self) -> None:
        try:
            self.run()
        except Exception:  # noqa: BLE001 - a thread's error has no caller; say it in the log
            log.warning("the live sample stream stopped", exc_info=True)
        finally:
            connections.close_all()

    def run(self) -> None:
        """Send every episode's events at their scaled times (at once when `seconds` is 0)."""
        schedule = sorted(
            (event["t"] * live.scale, k, n)
            for k, live in enumerate(self.episodes)
            for n, (event, _) in enumerate(live.payload)
        )
        started, i = time.monotonic(), 0
        while i < len(schedule) and not self.stopped.is_set():
            now = time.monotonic() - started
            if schedule[i][0] > now:
                self.stopped.wait(min(TICK_S, schedule[i][0] - now))
                continue
            due: dict[int, list[int]] = {}
            while i < len(schedule) and schedule[i][0] <= now + TICK_S / 2:
                due.setdefault(schedule[i][1], []).append(schedule[i][2])
                i += 1
            for k, positions in due.items():
                self._send(self.episodes[k], positions)
        for live in self.episodes:
            ingest.request_metrics(live.trace)
            self._close(live)

    def _close(self, live: _Live) -> None:
        """End the episode's stream (its Live badge clears now), as `trainer.sim.stream` does."""
        do_close_stream(live.trace.pk)

    def _send(self, live: _Live, positions: list[int]) -> None:
        fragment = core.Trace(source_format="api", source_id=live.trace.source_id)
        for n in positions:
            event, edges = live.payload[n]
            fragment.events.append(core.event_from_dict(event))
            fragment.edges.extend(core.edge_from_dict(edge) for edge in edges)
        ingest.do_ingest(live.trace.project, fragment, trace=live.trace, live=True)


#: The running stream of this process, per project id (a restart stops the previous one).
_running: dict[int, LiveStream] = {}
_running_lock = threading.Lock()


def do_restart_live_stream(project: Project, *, seconds: float | None = None) -> LiveStream:
    """Stop this process's stream of the project, empty the live sample traces in place (but those
    with user work, `has_user_work`: see LiveStream) and stream them anew over `seconds` (default
    SWARMSCOPE_SAMPLE_STREAM_S) in a background thread; with 0, all at once, here and now (the
    tests' setting)."""
    seconds = settings.SWARMSCOPE_SAMPLE_STREAM_S if seconds is None else seconds
    background = seconds > 0
    with _running_lock:
        previous = _running.pop(project.pk, None)
        if previous is not None:
            previous.stop()
        live = LiveStream(project, seconds)
        if background:
            _running[project.pk] = live.start()
    if not background:
        live.run()
    return live


# --- loading -----------------------------------------------------------------------------------


@dataclass
class SampleReport:
    """What `do_load_samples` did: one outcome per bundled file, the live stream (None: not asked)."""

    project: Project
    outcomes: list[ingest.FileOutcome]
    live: LiveStream | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[ingest.FileOutcome]:
        return [o for o in self.outcomes if o.error]

    @property
    def imported(self) -> list[Trace]:
        unique = {t.pk: t for o in self.outcomes for t in o.traces}  # a Claude Code session spans files
        return list(unique.values())

    def summary(self, *, streamed: bool = False) -> str:
        """One sentence for a page or a terminal (`streamed`: the live stream has ended)."""
        text = f"{len(self.imported)} sample traces are in the project {self.project.name}"
        if self.live is not None:
            text += _live_summary(self.live, streamed)
        if self.failed:
            text += f"; {len(self.failed)} files could not be imported"
        return text + "."


def _live_summary(live: LiveStream, streamed: bool) -> str:
    """What the live part did: the SwarmSim traces streamed anew (by id), then `kept_note`."""
    ids = ", ".join(str(t.pk) for t in live.restreamed)
    text = ""
    if ids:
        if not live.seconds:
            done = "were written"
        elif streamed:
            done = "were streamed live"
        else:
            done = f"are streaming live for about {live.seconds:.0f} s"
        text = f"; the SwarmSim pivot-12 traces {ids} {done}"
    return text + (f"; {live.kept_note()}" if live.kept else "")


def do_load_samples(
    user=None, *, stream: bool = True, seconds: float | None = None, root: Path = SAMPLES_DIR
) -> SampleReport:
    """Import the bundled samples into the Samples project (`user` becomes a member) and, with
    `stream`, (re)start the live SwarmSim suite. Never raises on a bad file (its outcome says why)."""
    project = do_get_samples_project(user)
    sources = sample_sources(root)
    report = SampleReport(project, ingest.do_import_sources(project, sources) if sources else [])
    if not sources:
        report.notes.append(f"no sample files found under {root}")
    if stream:
        report.live = do_restart_live_stream(project, seconds=seconds)
    return report
