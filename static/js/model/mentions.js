/**
 * @mention completion in a comment box, without a DOM: where the mention being typed starts, which
 * project members it may name, and the text once one is picked. A user name's characters and the
 * character an @ may not follow are webapp/review/services.py's MENTION (`(?<![\w@.+-])@([\w.+-]+)`),
 * so a completed mention is one the server parses.
 */

/** A character of a user name in a mention (Python's `\w` is Unicode letters, digits and `_`). */
const NAME_CHAR = /[\p{L}\p{N}\p{M}_.+-]/u;
/** What an @ may not follow for it to start a mention (an e-mail address's @ does not). */
const NOT_BEFORE_AT = /[\p{L}\p{N}\p{M}_@.+-]/u;

/**
 * The mention being typed at `caret` in `text`: {start (the index of its @), query (the name typed
 * so far, possibly "")}, or null where the caret is not right after an @mention's name.
 */
export function mentionAt(text, caret) {
  let i = caret;
  while (i > 0 && NAME_CHAR.test(text[i - 1])) i -= 1;
  if (i === 0 || text[i - 1] !== "@") return null;
  if (i >= 2 && NOT_BEFORE_AT.test(text[i - 2])) return null;
  return { start: i - 1, query: text.slice(i, caret) };
}

/**
 * The members (`[{username, name}]`) whose user name starts with `query` (case-insensitive), then
 * those whose full name has a word starting with it or whose user name contains it; each group in
 * the given order; at most `limit`.
 */
export function matchMembers(members, query, limit = 8) {
  const q = query.toLowerCase();
  const first = [];
  const then = [];
  for (const m of members) {
    const user = m.username.toLowerCase();
    if (user.startsWith(q)) first.push(m);
    else if (user.includes(q) || (m.name || "").toLowerCase().split(/\s+/).some((w) => w.startsWith(q))) then.push(m);
  }
  return [...first, ...then].slice(0, limit);
}

/**
 * `text` with the mention at `mention` (mentionAt's) up to `caret` replaced by `@username` and a
 * space (none added before existing white space): {text, caret} (the caret after it).
 */
export function insertMention(text, mention, caret, username) {
  const after = text.slice(caret);
  const inserted = `@${username}${/^\s/.test(after) ? "" : " "}`;
  return { text: text.slice(0, mention.start) + inserted + after, caret: mention.start + inserted.length };
}
