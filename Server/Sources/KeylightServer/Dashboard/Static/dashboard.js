// Progressive enhancement only: the dashboard works without this file.
// Adds a "Copy" button next to every element marked data-copy (keys, secrets, the Swift snippet).
document.addEventListener("DOMContentLoaded", () => {
  if (!navigator.clipboard) return;
  for (const element of document.querySelectorAll("[data-copy]")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-button";
    button.textContent = "Copy";
    button.addEventListener("click", async () => {
      await navigator.clipboard.writeText(element.textContent.trim());
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    element.insertAdjacentElement("afterend", button);
  }
});
