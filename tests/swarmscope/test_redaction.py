"""Redaction's needle shortcut (`swarmscope.redaction._needles`) changes no result: every text is
redacted exactly as applying each pattern's `sub` in turn would, on real trace texts with secrets
put into them and on patterns of every shape the shortcut reads; and the whole-value shortcuts of
span ingestion (`matches_nowhere`, `swarmscope.inputs.json_may_refuse`) skip a walk over a value's
strings only where it would have found nothing."""

import json
import random
import re

from django.conf import settings
from hypothesis import given
from hypothesis import settings as settings_of_hypothesis
from hypothesis import strategies as st

from swarmscope.importers import SourceFile, read_files
from swarmscope.inputs import json_may_refuse, refused_text_in
from swarmscope.redaction import REDACTED, _needles, compile_patterns, matches_nowhere, redact_text, redact_value

SECRETS = [
    "sk-proj-" + "A1b2C3d4E5f6G7h8J9",
    "ssk_" + "0123456789abcdefXYZ",
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "Bearer abcdefghijklmnop.qrs=",
    "bearer ZYXWVUTSRQPONMLKJI",
    "BEARER 0123456789ABCDEFGH==",
    "ops@example.org",
    "a.b+c@ex-ample.co.uk",
]
#: User patterns: a literal inside, a branch of literals, a branch with a class-only alternative (no
#: shortcut), case-insensitive (no shortcut), lookarounds, a pattern matching what another wrote.
USER_PATTERNS = [
    r"(?<!\w)\d{3}-\d{2}-\d{4}(?!\w)",
    r"token=(?:\w+)",
    r"(?:password|passwd|PWD)\s*[:=]\s*\S+",
    r"(?:secret|\d{6})",
    r"(?i)api[-_ ]?key\s*[:=]\s*\S+",
    r"\[REDACTED\]\s+and",
]


def plain(text, patterns):
    for pattern in patterns:
        text = pattern.sub(REDACTED, text)
    return text


def texts_of(traces):
    for trace in traces:
        for event in trace.events:
            if event.content:
                yield event.content
            yield from (v for v in event.attributes.values() if isinstance(v, str))


def check_same(texts, patterns, seed=0):
    rng = random.Random(seed)
    checked = changed = 0
    for text in texts:
        words = text.split(" ")
        for _ in range(2):
            words.insert(rng.randrange(len(words) + 1), rng.choice(SECRETS + ["PWD: hunter2", "token=abc", "123456"]))
        for variant in (text, " ".join(words), "123-45-6789 and " + text[:50], "API_KEY = x " + text[-50:]):
            expected = plain(variant, patterns)
            assert redact_text(variant, patterns) == expected, variant[:200]
            checked += 1
            changed += expected != variant
    return checked, changed


def test_the_needles_read_off_each_pattern_shape():
    needles = {p: _needles(re.compile(p)) for p in [*settings.SWARMSCOPE_REDACT_PATTERNS, *USER_PATTERNS]}
    assert list(needles.values()) == [
        ("sk-",),
        ("ssk_",),
        ("AKIA",),
        ("earer", "BEARER"),
        ("@",),
        ("-",),
        ("token=",),
        ("password", "passwd", "PWD"),
        None,  # `\d{6}` has no literal
        None,  # ignores case
        ("[REDACTED]",),
    ]


def test_redaction_with_the_shortcut_equals_every_sub_in_turn_on_the_fixtures(fixtures):
    patterns = compile_patterns([*settings.SWARMSCOPE_REDACT_PATTERNS, *USER_PATTERNS])
    files = [SourceFile(p.name, p.read_bytes()) for p in sorted(fixtures.glob("*.json"))]
    checked, changed = check_same(texts_of(read_files(files).traces), patterns)
    assert checked > 200 and changed > checked // 4


def test_redaction_with_the_shortcut_equals_every_sub_in_turn_on_real_traces(shared_data):
    patterns = compile_patterns([*settings.SWARMSCOPE_REDACT_PATTERNS, *USER_PATTERNS])
    folders = ["who-and-when", "mast", "claude-code"]
    files = [
        SourceFile(p.name, p.read_bytes())
        for folder in folders
        for p in sorted((shared_data / folder).rglob("*"))
        if p.is_file() and p.suffix in (".json", ".jsonl")
    ]
    texts = list(texts_of(read_files(files).traces))
    assert len(texts) > 2000
    checked, changed = check_same(texts[::3], patterns, seed=1)
    assert changed > checked // 4


# The whole-value shortcuts of span ingestion (webapp.traces.span_ingest._storable): one pass over a
# value's JSON text stands for the walks over its strings only where the walks would find nothing.
_PIECES = [*SECRETS, "sk-", "@", 'a"b', "back\\slash", "tab\there", "nul\x00", "lone\ud800", "é😀", "[REDACTED]"]
_texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=12), max_size=4).map("".join)
_values = st.recursive(
    _texts | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=12,
)


@settings_of_hypothesis(max_examples=400, deadline=None)
@given(value=_values, user=st.booleans())
def test_the_json_shortcuts_skip_a_walk_only_where_it_would_find_nothing(value, user):
    patterns = compile_patterns([*settings.SWARMSCOPE_REDACT_PATTERNS, *([*USER_PATTERNS[:3], 'a"b'] if user else [])])
    text = json.dumps(value, ensure_ascii=False)
    if matches_nowhere(text, patterns):
        assert redact_value(value, patterns) is value
    if not json_may_refuse(text):
        assert refused_text_in(value) is None


def test_the_json_shortcuts_hold_back_where_the_text_may_need_the_walk():
    patterns = compile_patterns(settings.SWARMSCOPE_REDACT_PATTERNS)
    assert matches_nowhere(json.dumps({"role": "user", "content": "plain text"}, ensure_ascii=False), patterns)
    assert not matches_nowhere(json.dumps({"to": "ops@example.org"}, ensure_ascii=False), patterns)
    assert not matches_nowhere("{}", compile_patterns([r'"quoted"\s']))  # a needle JSON escapes
    assert not matches_nowhere("{}", compile_patterns([r"\d{6}"]))  # a pattern without needles
    assert json_may_refuse(json.dumps({"k": "a\x00b"}, ensure_ascii=False))
    assert json_may_refuse(json.dumps({"lone\udc00": 1}, ensure_ascii=False))
    assert not json_may_refuse(json.dumps({"emoji": "😀", "text": "\\u0001"}, ensure_ascii=False))
