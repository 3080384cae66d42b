"""Waits on page state that hold under the app's Content-Security-Policy (`script-src 'self'`,
SWARMSCOPE_CSP): Playwright's `wait_for_function` evaluates its predicate with `eval` inside the
page, which that policy refuses; `page.evaluate` goes through the DevTools protocol, which it does
not govern. So these poll `page.evaluate` instead."""

from __future__ import annotations

import time
from typing import Any


def wait_until(page, expression: str, arg: Any = None, timeout_s: float = 60.0, every_s: float = 0.1) -> Any:
    """Poll `expression` (a JS function source, called with `arg`) until it returns a truthy value;
    that value. Raises TimeoutError naming the expression after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(expression, arg)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true within {timeout_s} s: {expression}")
        time.sleep(every_s)


def open_trace_page(page, app, trace_id: int) -> None:
    """Open a trace's page and wait until its first render is done (`window.swarmscope.ready`)."""
    page.goto(f"{app.url}/traces/{trace_id}/")
    wait_until(page, "() => Boolean(window.swarmscope) && document.body.dataset.seq !== undefined")
    page.evaluate("() => window.swarmscope.ready.then(() => true)")
