// The trace list's "Load sample data" form: say that it is working while the POST runs (importing
// takes a few seconds), and keep a second click from sending it twice.
for (const form of document.querySelectorAll("form[data-load-samples]")) {
  form.addEventListener("submit", () => {
    const button = form.querySelector("button[type=submit]");
    const status = form.querySelector("[data-load-samples-status]");
    if (button) {
      button.disabled = true;
      button.textContent = "Loading sample data…";
    }
    if (status) status.textContent = "Importing the sample traces and starting the live SwarmSim stream…";
  });
}
