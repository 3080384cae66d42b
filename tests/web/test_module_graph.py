"""webapp.web.module_graph and `{% modulepreload %}`: every ES module a page's entry imports,
transitively, each once; checked against a real JavaScript parser (espree, eslint's) on the real
page entries, and on small hand-written module trees."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.template import Context, Template
from django.test import override_settings

from webapp.web.module_graph import list_module_graph, module_imports, resolve_specifier
from webapp.web.templatetags.module_preload import page_modules

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "static"

#: Walks the module graph from argv's entries with espree (a full ES parser, eslint's), printing
#: the static-relative paths reached: the oracle the regex-based walk is compared with.
ESPREE_WALK = r"""
import { readFileSync, existsSync } from "node:fs";
import { dirname, join, normalize } from "node:path/posix";
import * as espree from "espree";
const [root, ...entries] = process.argv.slice(2);
const seen = new Set();
const queue = [...entries];
while (queue.length) {
  const path = queue.shift();
  if (seen.has(path) || !existsSync(join(root, path))) continue;
  seen.add(path);
  const ast = espree.parse(readFileSync(join(root, path), "utf8"), { ecmaVersion: "latest", sourceType: "module" });
  for (const node of ast.body) {
    const source = node.source?.value;
    if (source && /^\.\.?\//.test(source)) queue.push(normalize(join(dirname(path), source)));
  }
}
console.log(JSON.stringify([...seen]));
"""


def espree_graph(root: Path, *entries: str) -> list[str]:
    node = shutil.which("node")
    if node is None or not (REPO / "node_modules" / "espree").is_dir():
        pytest.skip("needs node and node_modules/espree (npm ci)")
    # Inside the repo, so that `espree` resolves from there; one file per call (xdist workers run at once).
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=REPO / "node_modules", prefix=".module_graph_oracle-", suffix=".mjs", delete=False
    ) as file:
        file.write(ESPREE_WALK)
    script = Path(file.name)
    try:
        out = subprocess.run(
            [node, str(script), str(root), *entries], capture_output=True, text=True, check=True, timeout=60
        )
    finally:
        script.unlink(missing_ok=True)
    return json.loads(out.stdout)


def find_in(root: Path):
    return lambda path: (root / path) if (root / path).is_file() else None


@pytest.mark.parametrize(
    "entries",
    [
        ("js/pages/trace_page.js", "js/panels/review.js"),
        ("js/pages/compare_page.js",),
        ("js/pages/runs_page.js",),
        ("js/pages/runs_compare.js",),
    ],
)
def test_real_page_entries_list_every_transitive_import_once(entries):
    listed = list_module_graph(entries, find_in(STATIC))
    assert len(listed) == len(set(listed)), "a module listed twice"
    assert listed[: len(entries)] == list(entries)
    assert set(listed) == set(espree_graph(STATIC, *entries))
    assert all((STATIC / path).is_file() for path in listed)


def test_the_trace_page_graph_holds_its_deep_imports():
    listed = set(page_modules("js/pages/trace_page.js"))
    # trace_page -> views/timeline -> views/timeline_layout -> model/delta_store: four levels down
    assert {"js/views/timeline.js", "js/views/timeline_layout.js", "js/model/delta_store.js"} <= listed
    assert "js/panels/review.js" not in listed  # another entry of the page, not imported by this one


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_statement_forms_comments_and_cycles(tmp_path):
    write(
        tmp_path,
        {
            "js/pages/a.js": (
                "/**\n * import { nope } from './not_a_module.js';\n"
                ' * @returns {import("../lib/typedef_only.js").T}\n */\n'
                "import {\n  one,\n  two,\n} from './b.js';\n"
                "import * as lib from '../lib/c.js';\n"
                'import "../lib/side.js";\n'
                'export { d } from "../lib/d.js";\n'
                "export * from './b.js';\n"  # b twice: listed once
                'import sigma from "sigma";\n'  # bare: not followed
                "const s = \"import x from './in_a_string.js'\";\n"
                "export function f() { return Array.from('xy'); }\n"
            ),
            "js/pages/b.js": "import { a } from './a.js';\nexport const one = 1, two = 2;\n",  # a cycle
            "js/lib/c.js": "import { d } from './d.js';\n",
            "js/lib/d.js": "export const d = 4;\n",
            "js/lib/side.js": "window.x = 1;\n",
        },
    )
    listed = list_module_graph(["js/pages/a.js"], find_in(tmp_path))
    assert listed == ["js/pages/a.js", "js/pages/b.js", "js/lib/c.js", "js/lib/side.js", "js/lib/d.js"]
    assert set(listed) == set(espree_graph(tmp_path, "js/pages/a.js"))


def test_a_missing_import_is_skipped_with_a_warning_naming_it_and_its_importer(tmp_path, caplog):
    write(tmp_path, {"js/a.js": "import { x } from './gone.js';\nimport { y } from './here.js';\n", "js/here.js": ""})
    with caplog.at_level(logging.WARNING, logger="webapp.web.module_graph"):
        listed = list_module_graph(["js/a.js", "js/no_entry.js"], find_in(tmp_path))
    assert listed == ["js/a.js", "js/here.js"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("js/gone.js" in m and "imported by js/a.js" in m for m in messages), messages
    assert any("js/no_entry.js" in m and "entry" in m for m in messages), messages


@pytest.mark.parametrize(
    ("importer", "specifier", "expected"),
    [
        ("js/pages/a.js", "./b.js", "js/pages/b.js"),
        ("js/pages/a.js", "../lib/c.js", "js/lib/c.js"),
        ("js/pages/a.js", "/static/js/lib/c.js", "js/lib/c.js"),
        ("js/a.js", "../../outside.js", None),
        ("js/a.js", "sigma", None),
        ("js/a.js", "https://cdn.example.org/x.js", None),
    ],
)
def test_resolve_specifier(importer, specifier, expected):
    assert resolve_specifier(importer, specifier) == expected


def test_module_imports_in_source_order():
    source = 'export { z } from "./z.js";\nimport "./side.js";\nimport { a } from "./a.js";\n'
    assert module_imports(source) == ["./z.js", "./side.js", "./a.js"]


@override_settings(STATIC_URL="/assets/")
def test_the_tag_writes_one_link_per_module_under_static_url():
    html = Template('{% load module_preload %}{% modulepreload "js/pages/compare_page.js" %}').render(Context())
    hrefs = [line.split('href="', 1)[1].rstrip('">') for line in html.splitlines()]
    assert all(line.startswith('<link rel="modulepreload" href="/assets/js/') for line in html.splitlines())
    assert hrefs == ["/assets/" + p for p in list_module_graph(["js/pages/compare_page.js"], find_in(STATIC))]
