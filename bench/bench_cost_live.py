"""Benchmark: the cost estimate of a what-if job against what the job sent to a real model (issue 29).

For each case (a Who&When log or a hand-made trace, and the message removed), the `openai` backend is
configured from the environment as a job's worker configures it (`OpenAIRollout.from_trace`:
SWARMSCOPE_OPENAI_* — by default the job's own defaults: temperature 1.0, 512 tokens a turn, every
turn after the fork, the orchestrator picking speakers where there is one, exact match), and:

1. the estimate the app shows before the job (`webapp.counterfactuals.costs`: `token_rule`, the
   server's tokenizer measured on the trace, and `plan_cost`, every chunk of SWARMSCOPE_ROLLOUT_CHUNK
   samples and the branch re-run of sample 0), with nothing sent but the four `/tokenize` counts;
2. the job, run as `services.do_run_chunk` runs it: per chunk a fresh backend, `paired(intervention,
   seeds)`, and for the chunk holding sample 0 also `paired(intervention, seeds[:1], traces=True)`,
   with the server's usage of every request summed (`usage()`, what a job stores in `usage`).

Prints per case the requests, prompt and completion tokens, sent vs estimated and their ratio (sent /
estimated; the estimate counts a re-generated turn at its recorded length plus the cap share of the
room its max_tokens leaves, the `recorded_length` figure at the recorded length), the share of turn
completions cut at max_tokens, and the wall time; `--markdown PATH` writes the table. A case's first job
is estimated as the app estimates a first job on a trace: with the shares a pilot of `--pilot` P of the
job's own samples measures (`costs.measure_pilot`; P = SWARMSCOPE_COST_PILOT_SAMPLES, 0: the prior
share), printed apart; where the pilot is one chunk (the default) the job takes it as its first chunk, as
the app's job does (`pilot.reuse`), and its usage is part of what the job sent. `--jobs K` runs K jobs
per case at successive seeds, the second and later estimated with the cap share calibrated on the case's
earlier jobs (`costs.cap_share_of`, the app's estimator on a trace's finished jobs). Needs a running server
(SWARMSCOPE_OPENAI_BASE_URL and _MODEL, else var/llm/server.env: trainer/llm_server.py) and, for the
Who&When cases, ../shared/data/who-and-when.

    .venv/bin/python bench/bench_cost_live.py [--samples 32] [--cases ag-12,ag-3,hc-6,handmade] [--jobs 1]
        [--pilot 8] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from swarmscope.importers import SourceFile, read_files  # noqa: E402
from swarmscope.interventions import Intervention  # noqa: E402
from swarmscope.model import Agent, Event, Trace  # noqa: E402
from trainer.rollout.openai import OpenAIRollout  # noqa: E402
from webapp.counterfactuals import costs  # noqa: E402

DATA = Path(os.environ.get("SWARMSCOPE_SHARED_DATA", ROOT.parent / "shared" / "data")) / "who-and-when"
#: Case name -> (Who&When folder and log, or None for the hand-made trace; the message removed).
CASES = {
    "ag-12": (("Algorithm-Generated", "12.json"), "h1"),
    "ag-3": (("Algorithm-Generated", "3.json"), "h4"),
    "hc-6": (("Hand-Crafted", "6.json"), "h3"),
    "handmade": (None, "r1"),
}
KEYS = ("requests", "prompt_tokens", "completion_tokens")


def handmade() -> Trace:
    """A hand-made trace: a question, a researcher's finding, a critic's check, the researcher's
    confirmation and the writer's final answer; system prompts, a ground truth."""
    events = [
        Event(
            "q",
            0.0,
            "message",
            "human",
            content="What is the code name of the lab's new battery project? Answer with FINAL ANSWER: <name>.",
        ),
        Event(
            "r1",
            1.0,
            "message",
            "researcher",
            content="I searched the lab's internal wiki. The battery project "
            "started in March; its code name is BLUEBIRD, and it is led by the materials group.",
        ),
        Event(
            "c1",
            2.0,
            "message",
            "critic",
            content="Good. Make sure the name is from the project page itself, "
            "not from an old meeting note, before we answer.",
        ),
        Event("r2", 3.0, "message", "researcher", content="Confirmed on the project page: the code name is BLUEBIRD."),
        Event("w1", 4.0, "message", "writer", content="FINAL ANSWER: BLUEBIRD"),
    ]
    agents = [
        Agent("human"),
        Agent("researcher", system_prompt="You are a researcher. Find facts and report them briefly."),
        Agent("critic", system_prompt="You are a careful critic. Check the team's claims."),
        Agent("writer", system_prompt="You write the team's final answer as FINAL ANSWER: <answer>."),
    ]
    return Trace(
        "native",
        "handmade-bluebird",
        name="code name",
        events=events,
        agents=agents,
        attributes={"ground_truth": "BLUEBIRD", "synthetic_time": True},
    )


def load(case: str) -> tuple[Trace, Intervention]:
    where, target = CASES[case]
    if where is None:
        return handmade(), Intervention("remove", (target,))
    path = DATA.joinpath(*where)
    if not path.is_file():
        sys.exit(f"needs {path} (the shared data folder)")
    return read_files([SourceFile(path.name, path.read_bytes())]).traces[0], Intervention("remove", (target,))


def run_job(
    trace: Trace, intervention: Intervention, n: int, first_seed: int = 0, taken: dict | None = None
) -> dict[str, int]:
    """The server's usage of a job of `n` samples (seeds first_seed ..), sent chunk by chunk as
    `do_run_chunk` sends it; a chunk that is exactly the done pilot `taken` is the pilot's (not sent
    again, its usage counted: `pilot.reuse`)."""
    chunk, total = settings.SWARMSCOPE_ROLLOUT_CHUNK, {}
    for start in range(0, n, chunk):
        backend = OpenAIRollout.from_trace(trace)
        seeds = np.arange(first_seed + start, first_seed + min(start + chunk, n))
        if taken and start == 0 and taken["samples"] == len(seeds):
            total = dict(taken["usage"])
        else:
            backend.paired(intervention, seeds)
        if start == 0:
            backend.paired(intervention, seeds[:1], traces=True)
        for key, value in backend.usage().items():
            total[key] = total.get(key, 0) + value
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--markdown", type=Path)
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="jobs per case, each at the next N seeds; the second and later are estimated with the cap "
        "share calibrated on the earlier ones (costs.cap_share_of), as the app calibrates on a trace's jobs",
    )
    parser.add_argument(
        "--pilot",
        type=int,
        default=settings.SWARMSCOPE_COST_PILOT_SAMPLES,
        help="a case's first job is estimated with the shares a pilot of this many of its own samples "
        "measures (costs.measure_pilot), as the app estimates a first job; 0: the prior share",
    )
    args = parser.parse_args()
    env_file = ROOT / "var" / "llm" / "server.env"
    if "SWARMSCOPE_OPENAI_BASE_URL" not in os.environ and env_file.is_file():
        for line in env_file.read_text().splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                os.environ.setdefault(key.strip(), value.strip())
    if "SWARMSCOPE_OPENAI_BASE_URL" not in os.environ:
        sys.exit("needs a running server: SWARMSCOPE_OPENAI_BASE_URL and _MODEL, or var/llm/server.env")
    header = (
        f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, model "
        f"{os.environ.get('SWARMSCOPE_OPENAI_MODEL')}, N = {args.samples}, chunk {settings.SWARMSCOPE_ROLLOUT_CHUNK}, "
        f"load {os.getloadavg()[0]:.1f} at the start"
    )
    print("# " + header, flush=True)
    rows = [
        "| case | job (seeds) | turns/pair | tokenizer | cap share (compl. / prompt), from | requests sent / est. "
        "| prompt sent / est. (ratio) | completion sent / est. (ratio) | ratios at recorded lengths (prompt, compl.) "
        "| cut at max_tokens | wall |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    pilots = [
        "| case | job | pilot samples | turns | requests | prompt tokens | completion tokens | wall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in args.cases.split(","):
        trace, intervention = load(case)
        finished: list[tuple[dict, dict]] = []  # this case's jobs, newest first: what the app calibrates on
        for job in range(args.jobs):
            runner = OpenAIRollout.from_trace(trace)
            first_seed = job * args.samples
            found = None
            if not finished and 0 < args.pilot < args.samples:  # a first job: the app's pilot
                found = costs.measure_pilot(OpenAIRollout.from_trace(trace), intervention, first_seed, args.pilot)
                pilots.append(
                    f"| {case} | {job + 1} | {args.pilot} | {found['plan']['turn_completions']} | "
                    f"{found['usage']['requests']} | {found['usage']['prompt_tokens']:,} | "
                    f"{found['usage']['completion_tokens']:,} | {found['seconds']:.0f} s |"
                )
                print(pilots[-1], flush=True)
            rule, source = costs.token_rule(runner, pilot_found=found)
            measured = costs.cap_share_of(finished)
            if measured is not None:
                share, held, used, turns_seen = measured
                rule = {**rule, "cap_share": share, "prompt_cap_share": share if held is None else held}
                rule["cap_share_source"] = f"measured on {used} earlier job(s) of this case ({turns_seen} turns)"
            parts = costs.plan_cost(runner, intervention, args.samples, rule=rule)
            estimate = costs._totals(parts)
            turns = sum(cost["turns"] for cost in parts["arms"].values())
            completions = estimate["turn_completions"]
            started = time.monotonic()
            sent = run_job(trace, intervention, args.samples, first_seed, found)
            wall = time.monotonic() - started + (found["seconds"] if found else 0)  # the pilot's chunk: the job's
            finished.insert(0, (estimate, sent))
            ratio = {k: sent[k] / estimate[k] for k in KEYS}
            recorded = {k: sent[k] / estimate["recorded_length"][k] for k in ("prompt_tokens", "completion_tokens")}
            row = (
                f"| {case} ({intervention.describe()}, {len(trace.events)} events, {runner.speaker_order}) "
                f"| {job + 1} ({first_seed}..{first_seed + args.samples - 1}) | {turns} | "
                f"{source}, {rule['chars_per_token']:.2f} chars/token | {rule['cap_share']:.2f} / "
                f"{rule['prompt_cap_share']:.2f}, {rule['cap_share_source']} | "
                f"{sent['requests']:,} / {estimate['requests']:,} | "
                f"{sent['prompt_tokens']:,} / {estimate['prompt_tokens']:,} ({ratio['prompt_tokens']:.2f}) | "
                f"{sent['completion_tokens']:,} / {estimate['completion_tokens']:,} "
                f"({ratio['completion_tokens']:.2f}) | "
                f"{recorded['prompt_tokens']:.2f}, {recorded['completion_tokens']:.2f} | "
                f"{sent.get('length_cut', 0) / max(1, completions):.0%} of {completions:,} | {wall:.0f} s |"
            )
            rows.append(row)
            print(row, flush=True)
    print(f"# load {os.getloadavg()[0]:.1f} at the end")
    if args.markdown:
        args.markdown.write_text("\n".join([header, "", *rows, "", "Pilots:", "", *pilots, ""]))


if __name__ == "__main__":
    main()
