/**
 * A column splitter: dragging `handle` (a `role="separator"` element) sets the CSS length
 * variable `variable` on `host` to the width of the column on the handle's right (`side`
 * "after", the default) or left ("before"). Arrow keys move it by 24 px (Shift: 96), Home/End go
 * to the bounds; double-click restores the default. The width is kept in localStorage under
 * `storageKey`.
 */

export const KEY_STEP = 24;

/** Clamp `width` into [min, max]. */
export function clampWidth(width, min, max) {
  return Math.round(Math.max(min, Math.min(max, width)));
}

/** Drag `handle` with the primary button: `onStart()` gives the value at the press, and
 * `onMove(start, delta)` is called with it and the pointer's movement along `axis` ("x" | "y"), px. */
export function dragWithPointer(handle, axis, onStart, onMove) {
  const at = (e) => (axis === "x" ? e.clientX : e.clientY);
  handle.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    const origin = at(e);
    const start = onStart();
    handle.setPointerCapture(e.pointerId);
    handle.classList.add("dragging");
    const move = (ev) => onMove(start, at(ev) - origin);
    const up = () => {
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      handle.removeEventListener("pointercancel", up);
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
    handle.addEventListener("pointercancel", up);
  });
}

export function makeResizer(handle, { host, variable, column, min = 240, max = 900, side = "after", storageKey = null }) {
  if (!handle || !host || !column) return null;
  const maxNow = () => Math.max(min, Math.min(max, host.clientWidth - 320));
  const apply = (width, save = true) => {
    const w = clampWidth(width, min, maxNow());
    host.style.setProperty(variable, `${w}px`);
    handle.setAttribute("aria-valuenow", String(w));
    handle.setAttribute("aria-valuemin", String(min));
    handle.setAttribute("aria-valuemax", String(maxNow()));
    if (save && storageKey) {
      try {
        localStorage.setItem(storageKey, String(w));
      } catch {
        // storage unavailable: the width just is not remembered
      }
    }
    return w;
  };
  const current = () => column.getBoundingClientRect().width;
  let saved = null;
  try {
    saved = storageKey ? Number(localStorage.getItem(storageKey)) : null;
  } catch {
    saved = null;
  }
  if (saved && Number.isFinite(saved)) apply(saved, false);
  else handle.setAttribute("aria-valuenow", String(Math.round(current())));

  const sign = side === "after" ? -1 : 1;
  dragWithPointer(handle, "x", current, (startW, delta) => apply(startW + sign * delta));
  handle.addEventListener("keydown", (e) => {
    const step = e.shiftKey ? KEY_STEP * 4 : KEY_STEP;
    let width = null;
    if (e.key === "ArrowLeft") width = current() - sign * step;
    else if (e.key === "ArrowRight") width = current() + sign * step;
    else if (e.key === "Home") width = min;
    else if (e.key === "End") width = maxNow();
    if (width === null) return;
    e.preventDefault();
    e.stopPropagation(); // not the page's event stepping
    apply(width);
  });
  handle.addEventListener("dblclick", () => {
    host.style.removeProperty(variable);
    if (storageKey) {
      try {
        localStorage.removeItem(storageKey);
      } catch {
        // nothing to forget
      }
    }
  });
  return { apply };
}
