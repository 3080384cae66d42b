/**
 * Keyboard paths of a page: skip links (`a.skip-link[href="#id"]`, templates/base.html) that move
 * the focus to their target, and the key help dialog that `?` opens (a native <dialog>: Escape
 * closes it and the focus goes back to where it was).
 */

import { el } from "./dom.js";

/** The trace page's keys, by where they act: `[{title, keys: [[keys, what], ...]}]`. */
export const TRACE_PAGE_KEYS = Object.freeze([
  { title: "Anywhere on the page", keys: [
    ["?", "show these keys"],
    ["Tab", "the skip links first: timeline, agent graph, transcript"],
    ["← →", "previous / next event in time"],
    ["/", "search the events"],
    ["Esc", "close the inspector and clear the selection (in full screen: leave it)"],
    ["f", "the timeline on the whole screen, and back"],
  ] },
  { title: "Timeline (focused)", keys: [
    ["← →", "previous / next event in time"],
    ["↑ ↓", "the nearest event in the lane above / below"],
    ["+ −", "zoom time in / out"],
    ["0", "fit the whole trace"],
  ] },
  { title: "Agent graph (focused)", keys: [
    ["← → ↑ ↓", "move to the nearest agent that way"],
    ["Home", "the first agent"],
    ["Enter", "select the agent (timeline lane, inspector)"],
  ] },
  { title: "Transcript (focused)", keys: [
    ["j k  ↓ ↑", "next / previous event"],
    ["Enter", "fold or unfold the event"],
  ] },
]);

/** Whether a key event is typed into a field (keys then belong to the field). */
export function isTyping(target) {
  return Boolean(target?.closest?.("input, textarea, select, [contenteditable='true']"));
}

/**
 * Make every `a.skip-link` under `root` focus its target (`href="#id"`; given tabindex -1 when it
 * is not focusable) instead of only scrolling to it.
 */
export function wireSkipLinks(root = document) {
  for (const link of root.querySelectorAll("a.skip-link[href^='#']")) {
    link.addEventListener("click", (e) => {
      const target = document.getElementById(link.getAttribute("href").slice(1));
      if (!target) return;
      e.preventDefault();
      if (target.tabIndex < 0 && !target.hasAttribute("tabindex")) target.tabIndex = -1;
      target.focus();
      target.scrollIntoView?.({ block: "nearest" });
    });
  }
}

/** The key help dialog: `open()` shows `sections` (as TRACE_PAGE_KEYS), Escape or Close hides it. */
export class KeysHelp {
  /** @param {{title: string, keys: [string, string][]}[]} sections */
  constructor(sections) {
    this.dialog = el("dialog", null, "keys-help");
    this.dialog.dataset.testid = "keys-help";
    this.dialog.setAttribute("aria-labelledby", "keys-help-title");
    const head = el("div", null, "keys-help-head");
    const title = el("h2", "Keyboard");
    title.id = "keys-help-title";
    const close = el("button", "Close", "button small");
    close.type = "button";
    close.addEventListener("click", () => this.close());
    head.append(title, close);
    this.dialog.append(head);
    for (const section of sections) {
      const list = el("dl", null, "keys-help-list");
      for (const [keys, what] of section.keys) {
        const dt = el("dt");
        for (const [i, key] of keys.split(/\s+/).entries()) {
          if (i) dt.append(" ");
          dt.append(el("kbd", key));
        }
        list.append(dt, el("dd", what));
      }
      const part = el("section");
      part.append(el("h3", section.title), list);
      this.dialog.append(part);
    }
    this.returnTo = null;
    this.dialog.addEventListener("close", () => {
      this.returnTo?.focus?.();
      this.returnTo = null;
    });
    document.body.append(this.dialog);
  }

  get isOpen() {
    return this.dialog.open;
  }

  open() {
    if (this.dialog.open) return;
    this.returnTo = document.activeElement;
    this.dialog.showModal();
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }
}

/**
 * Skip links and the `?` help on this page; returns the KeysHelp. `?` outside a field opens it.
 * @param {{title: string, keys: [string, string][]}[]} sections
 */
export function installKeyboardPaths(sections) {
  wireSkipLinks();
  const help = new KeysHelp(sections);
  document.addEventListener("keydown", (e) => {
    if (e.key !== "?" || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target) || help.isOpen) return;
    e.preventDefault();
    help.open();
  });
  return help;
}
