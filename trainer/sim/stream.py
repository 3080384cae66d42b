"""Stream SwarmSim episodes into a running Swarmscope app, live, through `swarmscope.client`.

    python -m trainer.sim.stream --url http://127.0.0.1:8000 --token ssk_... \\
        [--episodes 3] [--level medium] [--policy fan-out] [--fan-out 4] [--seed 0] \\
        [--batch-size 20] [--speed 10]

Each episode becomes one trace (source id `<task>/seed-<seed>/<policy>`, so re-running finds it
again and another policy on the same task makes another trace). `--level pivot-12` streams traces
of the pivot-12 suite instead (`trainer.sim.suites.pivot12_case(seed)`): a task whose 12 message
events carry planted effects, for "What if removed?" and "Attribute this trace" (the baseline
policies of the other levels send no message events; `--policy` does not apply there).
Its events are sent in time order, each edge right after the later of its two events, in
batches of `--batch-size`; `--speed` replays simulated seconds that many times faster (0: no
waiting), so the trace page grows as the swarm runs. Rewards, costs and the closed-form
`p_success` go into the trace's attributes. `--token` defaults to $SWARMSCOPE_TOKEN.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

from swarmscope.client import SwarmscopeClient
from trainer.sim.baselines import FixedFanOut, SpawnEverything, run_policy, single_agent
from trainer.sim.env import Episode, SwarmEnv
from trainer.sim.suites import pivot12_case
from trainer.sim.tasks import LEVELS, generate_task

POLICIES = ("single", "fan-out", "spawn-everything")
PIVOT12 = "pivot-12"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The CLI's arguments; exits with status 2 on bad ones (argparse), e.g. a missing token."""
    parser = argparse.ArgumentParser(prog="python -m trainer.sim.stream", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the app's base URL")
    parser.add_argument("--token", default=os.environ.get("SWARMSCOPE_TOKEN"), help="an API token")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument(
        "--level",
        choices=[*sorted(LEVELS), PIVOT12],
        default="medium",
        help=f"a SwarmSim level, or {PIVOT12} (messages with planted effects)",
    )
    parser.add_argument("--policy", choices=POLICIES, default="fan-out")
    parser.add_argument("--fan-out", type=int, default=4, help="k of the fan-out policy")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode (then +1 each)")
    parser.add_argument("--batch-size", type=int, default=20, help="events per batch sent")
    parser.add_argument("--speed", type=float, default=10.0, help="simulated seconds per real second (0: no wait)")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("--token is required (or set SWARMSCOPE_TOKEN)")
    if args.episodes < 1 or args.fan_out < 1 or args.batch_size < 1 or args.speed < 0:
        parser.error("--episodes, --fan-out and --batch-size must be >= 1, --speed >= 0")
    return args


def make_policy(name: str, fan_out: int):
    """The baseline policy called `name` (one of POLICIES)."""
    return {
        "single": single_agent(),
        "fan-out": FixedFanOut(fan_out, verifier=True),
        "spawn-everything": SpawnEverything(),
    }[name]


def trace_payload(episode: Episode) -> list[tuple[dict[str, Any], list[dict[str, str]]]]:
    """The episode as (native event dict, edges to send right after it) pairs, events in time order.

    Each edge rides with the later of its two events, so no edge names an unsent event.
    """
    events = sorted(episode.trace.events, key=lambda e: e.t)
    position = {event.id: k for k, event in enumerate(events)}
    edges: list[list[dict[str, str]]] = [[] for _ in events]
    for edge in episode.trace.edges:
        edges[max(position[edge.src], position[edge.dst])].append(edge.to_dict())
    return [(event.to_dict(), edges[k]) for k, event in enumerate(events)]


def trace_attributes(episode: Episode) -> dict[str, Any]:
    """Trace-level attributes sent with `create_trace`: the trace's own, rewards and costs."""
    return {**episode.trace.attributes, "rewards": episode.trace.rewards, "costs": episode.trace.costs}


def stream_episode(
    client: SwarmscopeClient, episode: Episode, *, batch_size: int, speed: float, source_id: str | None = None
) -> int:
    """Send one episode as a new trace (identity `source_id`, default the episode's); returns the trace id."""
    trace = episode.trace
    with client.stream(
        trace.name,
        batch_size=batch_size,
        system=trace.system,
        source_id=source_id or trace.source_id,
        attributes=trace_attributes(episode),
        rewards=trace.rewards,
        costs=trace.costs,
    ) as live:
        started = time.monotonic()
        for event, edges in trace_payload(episode):
            if speed:
                time.sleep(max(0.0, event["t"] / speed - (time.monotonic() - started)))
            live.event(**event)
            for edge in edges:
                live.edge(edge["src"], edge["dst"], edge["type"])
    return live.trace_id


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    client = SwarmscopeClient(args.url, args.token)
    policy = make_policy(args.policy, args.fan_out)
    for k in range(args.episodes):
        seed = args.seed + k
        if args.level == PIVOT12:
            episode = pivot12_case(seed).episode
            source_id = episode.trace.source_id
        else:
            episode = run_policy(SwarmEnv(generate_task(args.level, seed), seed=seed), policy)
            source_id = f"{episode.trace.source_id}/{args.policy}"
        trace_id = stream_episode(client, episode, batch_size=args.batch_size, speed=args.speed, source_id=source_id)
        print(
            f"episode {k}: trace {trace_id}, {len(episode.trace.events)} events, "
            f"reward {episode.reward:.0f}, E[R] {episode.p_success:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
