// Shared helpers for every page: CSRF for fetch and htmx, toasts.
(function () {
  "use strict";

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  const TOAST_SECONDS = { success: 8, info: 8, warning: 12, error: 15 };

  function dismiss(toast) {
    if (toast && toast.parentNode) toast.parentNode.removeChild(toast);
  }

  function armToast(toast) {
    const level = toast.dataset.level || "info";
    const close = toast.querySelector(".toast-close");
    if (close) close.addEventListener("click", () => dismiss(toast));
    const seconds = TOAST_SECONDS[level] || 8;
    setTimeout(() => dismiss(toast), seconds * 1000);
  }

  // Show a toast; level is success, info, warning or error (the commit endpoint's levels).
  function toast(level, message) {
    const region = document.getElementById("toasts");
    if (!region) return null;
    const safeLevel = ["success", "info", "warning", "error"].includes(level) ? level : "info";
    const item = document.createElement("div");
    item.className = "toast toast-" + safeLevel;
    item.dataset.level = safeLevel;
    const text = document.createElement("div");
    text.className = "toast-message";
    text.textContent = message;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "toast-close";
    close.setAttribute("aria-label", "Dismiss notification");
    close.textContent = "×";
    item.append(text, close);
    region.appendChild(item);
    armToast(item);
    return item;
  }

  // JSON POST to the API with the session's CSRF token; resolves to {ok, status, data}.
  async function postJSON(url, body, options) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      keepalive: Boolean(options && options.keepalive),
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": csrfToken(),
      },
      body: JSON.stringify(body || {}),
    });
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    return { ok: response.ok, status: response.status, data: data };
  }

  // The API's error envelope as one sentence.
  function errorMessage(result, fallback) {
    const error = result && result.data && result.data.error;
    if (error && error.message) return error.message;
    if (result && result.status === 403) return "Your login has expired. Reload the page and log in again.";
    return fallback || "Something went wrong. Try again.";
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("#toasts .toast").forEach(armToast);
  });
  document.addEventListener("htmx:configRequest", (event) => {
    event.detail.headers["X-CSRFToken"] = csrfToken();
  });

  window.Mnemo = { csrfToken, toast, postJSON, errorMessage };
})();
