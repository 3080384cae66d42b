/** Small DOM helpers shared by the page modules. Trace content only ever goes in as text. */

/** A new `tag` element with `text` as its text content and an optional class name. */
export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

/** Django's CSRF token from its cookie, for the session-authenticated POSTs of the page. */
export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}
