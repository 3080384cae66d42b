// Copy buttons: `<button data-copy="ID">` copies the text of the element with that id and says so
// in the next `[data-copy-status]` element. Falls back to selecting the text where the Clipboard API
// is unavailable (a page served over plain HTTP to another host), so Ctrl-C finishes the job.
function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

for (const button of document.querySelectorAll("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    let status = button.nextElementSibling;
    while (status && !status.hasAttribute("data-copy-status")) status = status.nextElementSibling;
    try {
      await navigator.clipboard.writeText(source.textContent);
      if (status) status.textContent = "Copied.";
    } catch {
      selectText(source);
      if (status) status.textContent = "Selected: press Ctrl-C (or ⌘-C) to copy.";
    }
  });
}
