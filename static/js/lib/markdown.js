/**
 * Markdown of untrusted trace content, rendered safely: `marked` (GFM, single newlines kept as
 * line breaks) turns it into HTML, raw HTML in the source is shown as text (an agent that read
 * a web page shows the page's markup, it is not rendered), and DOMPurify sanitises the result
 * (no scripts, handlers, styles, forms, frames or images; links open in a new tab without
 * referrer). Both libraries are vendored (Makefile VENDOR_FILES) and loaded as globals by the
 * trace page; without them (or in node) the content is plain text.
 *
 * A whole-JSON content is pretty-printed as a code block.
 */

const FORBID_TAGS = ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "frame",
  "object", "embed", "img", "video", "audio", "source", "picture", "svg", "math", "link", "meta", "base"];
const FORBID_ATTR = ["style", "id", "name", "class"];

let configured = null;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/** The page's vendored marked and DOMPurify, configured once; null when absent. */
function libraries() {
  if (configured !== null) return configured || null;
  const markedLib = globalThis.marked;
  const purify = globalThis.DOMPurify;
  if (!markedLib?.Marked || !purify?.sanitize || !purify.isSupported) {
    configured = false;
    return null;
  }
  const marked = new markedLib.Marked({ gfm: true, breaks: true, async: false });
  marked.use({
    renderer: {
      // Raw HTML blocks and inline tags in the source are shown as text.
      html: ({ text }) => escapeHtml(text),
    },
  });
  purify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });
  configured = { marked, purify };
  return configured;
}

/** True when a whole text is a JSON object or array; returns it pretty-printed, else null. */
export function prettyJson(text) {
  const trimmed = text.trim();
  if (!((trimmed.startsWith("{") && trimmed.endsWith("}")) || (trimmed.startsWith("[") && trimmed.endsWith("]")))) return null;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return null;
  }
}

/**
 * Sanitised HTML of `text` rendered as Markdown (a string to put in `innerHTML`), or null when
 * the libraries are not loaded (then show the text with `textContent`).
 */
export function markdownHtml(text) {
  const libs = libraries();
  if (!libs) return null;
  const json = prettyJson(text);
  const html = json !== null
    ? `<pre><code data-lang="json">${escapeHtml(json)}</code></pre>`
    : libs.marked.parse(text);
  return libs.purify.sanitize(html, {
    FORBID_TAGS, FORBID_ATTR, ALLOW_DATA_ATTR: false, ADD_ATTR: ["target", "data-lang"],
    ALLOWED_URI_REGEXP: /^(?:https?|mailto):/i,
  });
}

/** Fill `node` with `text` rendered as safe Markdown (plain text without the libraries). */
export function renderMarkdownInto(node, text) {
  const html = markdownHtml(text);
  if (html === null) {
    node.classList.add("plain");
    node.textContent = text;
  } else {
    node.innerHTML = html;
  }
}
