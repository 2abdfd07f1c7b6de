// Tool runs in the admin (list and run page): while any run shown has not finished, asks the admin's live endpoint
// each second for their status, progress, status message and duration and updates them in place; on a run's page it also
// announces a change of status and takes the Cancel button away once the run has finished. Polling stops when
// every run shown has finished, and pauses while the page is hidden.
(function () {
  "use strict";

  const POLL_MS = 1000;
  let timer = null;

  function cells(id) {
    const selector = id === undefined ? "[data-run][data-run-field]" : `[data-run="${CSS.escape(id)}"][data-run-field]`;
    return Array.from(document.querySelectorAll(selector));
  }

  function unfinished() {
    return cells()
      .filter((cell) => cell.dataset.runField === "status" && cell.dataset.runFinished === "0")
      .map((cell) => cell.dataset.run);
  }

  function progressCell(cell, state) {
    const words = state.progress === null ? "" : state.total ? `${state.progress} of ${state.total}` : `${state.progress}`;
    let bar = cell.querySelector("progress");
    if (state.progress !== null && state.total) {
      if (!bar) {
        bar = document.createElement("progress");
        bar.setAttribute("aria-label", cell.dataset.runLabel || "Progress");
      }
      bar.max = state.total;
      bar.value = state.progress;
      cell.replaceChildren(bar, ` ${words}`);
    } else {
      cell.replaceChildren(words);
    }
  }

  function apply(id, state) {
    for (const cell of cells(id)) {
      const field = cell.dataset.runField;
      if (field === "status") {
        const changed = cell.textContent !== state.statusLabel;
        cell.textContent = state.statusLabel;
        cell.dataset.runFinished = state.finished ? "1" : "0";
        const announce = document.querySelector(`[data-run-announce="${CSS.escape(id)}"]`);
        if (changed && announce) announce.textContent = `Status: ${state.statusLabel}.`;
      } else if (field === "progress") {
        progressCell(cell, state);
      } else if (field === "progress_message") {
        cell.textContent = state.progressMessage;
      } else if (field === "status_message") {
        cell.textContent = state.statusMessage;
      } else if (field === "duration") {
        cell.textContent = state.duration;
      }
    }
    if (!state.cancellable) {
      const cancel = document.querySelector(`[data-run-cancel="${CSS.escape(id)}"]`);
      if (cancel) cancel.remove();
    }
  }

  async function poll() {
    timer = null;
    const ids = unfinished();
    const holder = document.querySelector("[data-run-live-url]");
    if (!ids.length || !holder) return;
    const url = new URL(holder.dataset.runLiveUrl, window.location.href);
    ids.forEach((id) => url.searchParams.append("id", id));
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) {
        const answer = await response.json();
        for (const [id, state] of Object.entries(answer.runs || {})) apply(id, state);
      }
    } catch (error) {
      // Offline for a moment, or the server restarting: the next poll tries again.
    }
    schedule();
  }

  function schedule() {
    if (timer !== null || document.hidden || !unfinished().length) return;
    timer = setTimeout(poll, POLL_MS);
  }

  document.addEventListener("visibilitychange", schedule);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", schedule);
  else schedule();
})();
