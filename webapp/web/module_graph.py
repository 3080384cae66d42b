"""The ES module graph of a page's entry modules under the static files, for `<link rel="modulepreload">`.

A page that loads its JavaScript as native ES modules (no bundler) fetches each import only after
its parent has been fetched and parsed: the trace page's ~40 modules arrive in about five waves
(bench/RESULTS.md, issue 17). Listing the whole graph as `modulepreload` links in the page's head
lets the browser fetch every module at once. `list_module_graph` reads the static `import ... from
"./x.js"` and `export ... from "./x.js"` statements of the entries and of everything they import;
the template tag `{% modulepreload %}` (webapp/web/templatetags/module_preload.py) writes the links.

Only relative specifiers (`./`, `../`) and site paths under STATIC_URL are followed: a bare
specifier ("sigma") would need an import map, which the pages do not have. Dynamic `import()` is
not followed (what a page loads on demand is not preloaded). An import whose file is missing is
skipped with a logged warning: the page then fails on it as it would without the links.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Callable, Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

#: `import {a, b} from "./x.js"`, `import * as m from "../y.js"`, `export {c} from "./z.js"`,
#: `export * from "./z.js"`: a statement at the start of a line (after indentation), its bindings
#: possibly over several lines, up to `from` and the quoted specifier. Comment lines (` * import`)
#: do not start with the keyword, and `[^;'"]` stops at the first string or statement end.
_FROM = re.compile(r"""^[ \t]*(?:import|export)\b[^;'"]*?\bfrom[ \t]*(['"])([^'"\n]+)\1""", re.MULTILINE)
#: `import "./side_effect.js"`
_BARE = re.compile(r"""^[ \t]*import[ \t]*(['"])([^'"\n]+)\1""", re.MULTILINE)


def module_imports(source: str) -> list[str]:
    """The specifiers of the static imports and re-exports in ES module `source`, in the order they
    appear (duplicates kept)."""
    found = [(m.start(), m.group(2)) for m in _FROM.finditer(source)]
    found += [(m.start(), m.group(2)) for m in _BARE.finditer(source)]
    return [spec for _, spec in sorted(found)]


def resolve_specifier(importer: str, specifier: str, static_url: str = "/static/") -> str | None:
    """The static-relative path (`js/lib/dom.js`) that `specifier` names when imported from the module
    at static-relative path `importer`, or None for a specifier that is not a relative or site path
    under `static_url` (a bare name, another origin)."""
    if specifier.startswith(("./", "../")):
        path = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    elif specifier.startswith(static_url):
        path = posixpath.normpath(specifier[len(static_url) :])
    else:
        return None
    return None if path.startswith("../") or path == ".." else path


def list_module_graph(
    entries: Iterable[str], find: Callable[[str], Path | None], static_url: str = "/static/"
) -> list[str]:
    """Every module reachable from `entries` (static-relative paths such as `js/pages/trace_page.js`),
    the entries first, then in breadth-first order of discovery; each path once.

    `find(path)` gives the file of a static-relative path, or None when there is none (Django's
    `staticfiles.finders.find`). A missing entry or import is logged as a warning and left out
    (with what imports it); a specifier that is not followed (see `resolve_specifier`) is logged at
    debug level."""
    order: list[str] = []
    seen: set[str] = set()
    queue: list[tuple[str, str | None]] = [(entry, None) for entry in entries]
    while queue:
        path, importer = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        file = find(path)
        if file is None:
            logger.warning(
                "modulepreload: no static file %s%s", path, f" (imported by {importer})" if importer else " (entry)"
            )
            continue
        order.append(path)
        for specifier in module_imports(Path(file).read_text(encoding="utf-8")):
            target = resolve_specifier(path, specifier, static_url)
            if target is None:
                logger.debug("modulepreload: %s imports %r, not followed", path, specifier)
            elif target not in seen:
                queue.append((target, path))
    return order
