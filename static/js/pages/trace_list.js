/**
 * Trace list page: pick two traces to compare side by side, and `/` focuses the search box.
 */

const form = document.querySelector("[data-testid=compare-form]");
if (form) {
  const boxes = () => [...document.querySelectorAll("input[name=compare]")];
  const button = form.querySelector("button");
  const update = () => {
    const picked = boxes().filter((b) => b.checked);
    button.disabled = picked.length !== 2;
    button.textContent = picked.length === 2 ? "Compare the 2 selected" : `Select 2 traces to compare (${picked.length})`;
  };
  document.addEventListener("change", (event) => {
    if (event.target.name === "compare") update();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const [left, right] = boxes().filter((b) => b.checked).map((b) => b.value);
    if (left && right) window.location.assign(`${form.action}?left=${left}&right=${right}`);
  });
  update();
}

document.addEventListener("keydown", (event) => {
  const search = document.querySelector("input[type=search]");
  if (event.key === "/" && search && document.activeElement !== search) {
    event.preventDefault();
    search.focus();
  }
});
