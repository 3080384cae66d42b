/**
 * @mention completion on a comment box (the Review panel's): typing @ lists the project's members
 * (`loadMembers()`, asked once, resolving to `[{username, name}]`) under the box, narrowed as the
 * name is typed (model/mentions.js). ↓ / ↑ move through the list, Enter or Tab puts the mention in,
 * Escape closes the list (and only the list); a click picks too. The box is an ARIA combobox
 * whose active option is `aria-activedescendant`.
 */

import { el } from "../lib/dom.js";
import { insertMention, matchMembers, mentionAt } from "../model/mentions.js";

let pickers = 0;

export class MentionPicker {
  /**
   * @param {HTMLTextAreaElement} textarea the comment box
   * @param {{loadMembers: () => Promise<{username: string, name: string}[]>}} options
   */
  constructor(textarea, { loadMembers }) {
    this.textarea = textarea;
    this.loadMembers = loadMembers;
    this.members = null; // loaded on the first @
    this.mention = null; // mentionAt's answer while the list is open
    this.options = [];
    this.active = 0;
    pickers += 1;
    this.list = el("ul", null, "mention-list");
    this.list.id = `mention-list-${pickers}`;
    this.list.setAttribute("role", "listbox");
    this.list.setAttribute("aria-label", "Members to mention");
    this.list.dataset.testid = "mention-list";
    this.list.hidden = true;
    textarea.after(this.list);
    textarea.setAttribute("role", "combobox");
    textarea.setAttribute("aria-autocomplete", "list");
    textarea.setAttribute("aria-controls", this.list.id);
    textarea.setAttribute("aria-expanded", "false");
    textarea.addEventListener("input", () => this.update());
    textarea.addEventListener("click", () => this.update());
    textarea.addEventListener("keydown", (e) => this.onKey(e));
    textarea.addEventListener("blur", () => this.close());
    // A press on an option must not blur the box first (which would close the list).
    this.list.addEventListener("mousedown", (e) => e.preventDefault());
    this.list.addEventListener("click", (e) => {
      const option = e.target.closest("[data-username]");
      if (option) this.pick(option.dataset.username);
    });
  }

  /** Open, narrow or close the list for the mention at the caret. */
  async update() {
    const { value, selectionStart, selectionEnd } = this.textarea;
    const mention = selectionStart === selectionEnd ? mentionAt(value, selectionStart) : null;
    if (!mention) {
      this.close();
      return;
    }
    if (this.members === null) {
      try {
        this.members = await this.loadMembers();
      } catch {
        this.members = null; // asked again at the next @ (the panel shows the request's error)
        return;
      }
      // The box may have changed while the members were on their way.
      if (mentionAt(this.textarea.value, this.textarea.selectionStart)?.start !== mention.start) return this.update();
    }
    this.mention = mention;
    this.options = matchMembers(this.members, mention.query);
    this.active = 0;
    this.render();
  }

  render() {
    const open = this.mention !== null && this.options.length > 0;
    this.list.hidden = !open;
    this.textarea.setAttribute("aria-expanded", String(open));
    this.list.replaceChildren();
    if (!open) {
      this.textarea.removeAttribute("aria-activedescendant");
      return;
    }
    this.options.forEach((m, i) => {
      const option = el("li", null, "mention-option");
      option.id = `${this.list.id}-${i}`;
      option.setAttribute("role", "option");
      option.setAttribute("aria-selected", String(i === this.active));
      option.dataset.username = m.username;
      option.append(el("strong", `@${m.username}`));
      if (m.name) option.append(" ", el("span", m.name, "muted"));
      this.list.append(option);
    });
    this.textarea.setAttribute("aria-activedescendant", `${this.list.id}-${this.active}`);
    this.list.children[this.active]?.scrollIntoView?.({ block: "nearest" });
  }

  onKey(e) {
    if (this.list.hidden) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const n = this.options.length;
      this.active = (this.active + (e.key === "ArrowDown" ? 1 : -1) + n) % n;
      this.render();
    } else if (e.key === "Enter" || e.key === "Tab") {
      this.pick(this.options[this.active].username);
    } else if (e.key === "Escape") {
      this.close();
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation(); // the page's own keys (Esc closes the inspector) wait while the list is open
  }

  /** Put `@username` in place of the mention being typed. */
  pick(username) {
    if (!this.mention) return;
    const { text, caret } = insertMention(this.textarea.value, this.mention, this.textarea.selectionStart, username);
    this.textarea.value = text;
    this.textarea.setSelectionRange(caret, caret);
    this.textarea.focus();
    this.close();
  }

  close() {
    this.mention = null;
    this.options = [];
    this.render();
  }
}
