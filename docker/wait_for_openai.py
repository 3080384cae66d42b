"""Wait until an OpenAI-compatible server (`vllm serve`) lists a model; standard library only.

    python docker/wait_for_openai.py [--timeout S] BASE_URL MODEL

BASE_URL ends in /v1 (e.g. http://vllm:8001/v1). Polls GET BASE_URL/models every 2 s; exits 0 once
MODEL is among the listed ids, 1 when the timeout (seconds, default 900) passes first, saying what
the server last answered (unreachable, an HTTP status, or the models it does serve).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request


def listed_models(base_url: str, timeout: float = 5.0) -> list[str]:
    """The model ids of GET {base_url}/models. Raises OSError (incl. HTTPError) or ValueError."""
    request = urllib.request.Request(base_url.rstrip("/") + "/models", headers={"Accept": "application/json"})
    key = os.environ.get("SWARMSCOPE_OPENAI_API_KEY")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return [m["id"] for m in json.loads(response.read())["data"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("model")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.timeout
    last = "no answer yet"
    while True:
        try:
            models = listed_models(args.base_url)
            if args.model in models:
                print(f"wait_for_openai: {args.base_url} serves {args.model}", flush=True)
                return 0
            last = f"it serves {models}, not {args.model!r}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} from {args.base_url}/models"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            last = f"{args.base_url}/models unreachable or unreadable: {exc}"
        if time.monotonic() >= deadline:
            print(f"wait_for_openai: gave up after {args.timeout:.0f} s: {last}", file=sys.stderr)
            return 1
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
