// The chat page: streamed replies (SSE over fetch), the topic chip, Commit to Memory, End chat,
// the context debug panel, and the session lifecycle (heartbeat, visibility, close on leaving).
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("chat-config").textContent);
  const urls = config.urls;
  const { toast, postJSON, errorMessage, csrfToken } = window.Mnemo;

  const layout = document.getElementById("chat-layout");
  const messagesList = document.getElementById("messages");
  const emptyState = document.getElementById("chat-empty");
  const composer = document.getElementById("composer");
  const input = document.getElementById("composer-input");
  const sendButton = document.getElementById("send-button");
  const chip = document.getElementById("topic-chip");
  const chipTitle = document.getElementById("topic-chip-title");
  const commitButton = document.getElementById("commit-button");
  const commitReason = document.getElementById("commit-reason");
  const endButton = document.getElementById("end-chat-button");
  const debugSwitch = document.getElementById("debug-switch");
  const debugPanel = document.getElementById("debug-panel");
  const debugBody = document.getElementById("debug-body");
  const announcer = document.getElementById("chat-announcer");
  const heading = document.getElementById("chat-heading");
  const sessionList = document.getElementById("session-list");
  const banner = document.getElementById("chat-banner");

  const state = {
    sessionId: config.session_id,
    status: config.session_status,
    history: config.history.slice(),
    topic: null,
    lastContext: config.context,
    busy: false,
    lifecycleStarted: false,
    closeSent: false,
    heartbeatTimer: null,
  };

  const fill = (template, id) => template.replace("__id__", id);
  const DEBUG_KEY = "mnemo.chat.debug";

  // ---- DOM helpers --------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function announce(text) {
    announcer.textContent = "";
    setTimeout(() => { announcer.textContent = text; }, 50);
  }

  function scrollToEnd() {
    messagesList.scrollTop = messagesList.scrollHeight;
  }

  function appendMessage(role, text, options) {
    if (emptyState) emptyState.hidden = true;
    messagesList.classList.remove("is-empty");
    const item = el("li", { className: "message message-" + role });
    item.append(el("span", { className: "message-role", text: role === "user" ? "You" : "Assistant" }));
    const body = el("div", { className: "message-body" });
    body.textContent = text;
    item.append(body);
    if (options && options.streaming) {
      item.classList.add("streaming");
      item.setAttribute("aria-busy", "true");
    }
    messagesList.append(item);
    scrollToEnd();
    return item;
  }

  function finishMessage(item, note) {
    item.classList.remove("streaming");
    item.removeAttribute("aria-busy");
    if (note) item.append(el("span", { className: "message-note", text: note }));
  }

  function failMessage(item, text) {
    item.classList.add("message-error");
    const body = item.querySelector(".message-body");
    body.textContent = body.textContent ? body.textContent + "\n\n" + text : text;
    finishMessage(item);
  }

  function setBusy(busy) {
    state.busy = busy;
    sendButton.disabled = busy || !canSend();
    sendButton.textContent = busy ? "Sending…" : "Send";
    messagesList.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function canSend() {
    return !state.sessionId || state.status === "open";
  }

  function showClosed(message) {
    state.status = "closed";
    stopLifecycle();
    input.disabled = true;
    sendButton.disabled = true;
    banner.hidden = false;
    banner.querySelector(".banner-text").textContent = message;
    endButton.hidden = true;
    // Commit is off on a closed chat, and the page says why next to the button.
    commitButton.disabled = true;
    commitButton.setAttribute("aria-describedby", "commit-reason");
    commitReason.textContent = config.commit_closed_reason;
    commitReason.hidden = false;
    const current = sessionList.querySelector('[aria-current="page"] .session-meta');
    if (current) current.textContent = current.textContent.replace(/open$/, "closed");
  }

  // ---- Topic chip ---------------------------------------------------------------------------
  function showTopic(topic, fromTurn) {
    if (!topic || !topic.title) return;
    const changed = !state.topic || state.topic.key !== topic.key;
    const previous = state.topic;
    state.topic = topic;
    chip.hidden = false;
    chip.dataset.topicKey = topic.key || "";
    chipTitle.textContent = topic.title;
    const score = typeof topic.score === "number" ? topic.score.toFixed(2) : topic.score;
    chip.title = "Topic inferred for this chat" + (score ? " (score " + score + ", " + (topic.source || "inferred") + ")" : "");
    if (changed && fromTurn) {
      chip.classList.remove("changed");
      void chip.offsetWidth; // restart the flash animation
      chip.classList.add("changed");
      announce(previous ? "Topic changed to " + topic.title : "Topic: " + topic.title);
    }
  }

  function topicFromHeaders(headers) {
    const key = headers.get("X-Reggie-Topic");
    if (!key) return null;
    const score = parseFloat(headers.get("X-Reggie-Topic-Score") || "");
    return {
      key: key,
      title: headers.get("X-Reggie-Topic-Title") || key,
      score: Number.isNaN(score) ? null : score,
      source: headers.get("X-Reggie-Topic-Source") || "inferred",
    };
  }

  // ---- Debug panel --------------------------------------------------------------------------
  function debugWanted() {
    return debugSwitch.checked || config.verbose_logging;
  }

  function fmt(value, digits) {
    if (value === null || value === undefined || value === "") return "—";
    if (typeof value === "number") return digits === undefined ? String(value) : value.toFixed(digits);
    return String(value);
  }

  function renderDebug(context) {
    debugBody.replaceChildren();
    if (!state.sessionId) {
      debugBody.append(el("p", { className: "muted", text: "Send a message to see the context pack of each turn." }));
      return;
    }
    if (!context || (!context.pack && !context.status)) {
      const needed = config.min_user_turns;
      debugBody.append(el("p", { className: "muted", text: "No context pack yet. Mnemo adds stored context from the " + ordinal(needed) + " message of a chat on." }));
      if (context && context.last_failure) renderFailure(context.last_failure);
      return;
    }
    const topic = context.topic;
    const rows = [
      ["Status", (context.status || "—") + (context.reason ? " (" + context.reason + ")" : "")],
      ["Turn", fmt(context.turn)],
      ["Topic", topic ? topic.title + " · " + fmt(topic.score, 2) + " · " + (topic.source || "") : "none"],
      ["Pack size", fmt(context.chars) + " chars · " + fmt(context.tokens) + " tokens"],
      ["Reused", context.reused ? "yes (unchanged pack)" : "no"],
      ["Hash", context.hash ? String(context.hash).slice(0, 12) : "—"],
      ["Prepared in", fmt(context.elapsed_ms, 1) + " ms"],
    ];
    if ((context.skipped || []).length) rows.push(["Left out (budget)", context.skipped.join("; ")]);
    const meta = el("dl", { className: "meta" });
    for (const [term, value] of rows) meta.append(el("dt", { text: term }), el("dd", { text: value }));
    debugBody.append(meta);

    debugBody.append(el("h3", { text: "Segments" }));
    const segments = context.segments || [];
    if (!segments.length) {
      debugBody.append(el("p", { className: "muted", text: "No segments in this pack." }));
    } else {
      const table = el("table", { id: "debug-segments" });
      table.append(el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Segment" }), el("th", { scope: "col", className: "num", text: "Chars" }), el("th", { scope: "col", text: "Truncated" }))));
      const tbody = el("tbody");
      for (const segment of segments) {
        tbody.append(el("tr", {},
          el("td", { text: segment.name }),
          el("td", { className: "num", text: fmt(segment.chars) }),
          el("td", { className: segment.truncated ? "truncated" : "", text: segment.truncated ? "yes" : "no" })));
      }
      table.append(tbody);
      debugBody.append(el("div", { className: "table-wrap" }, table));
    }

    debugBody.append(el("h3", { text: "Memories" }));
    const memories = context.memories || [];
    if (!memories.length) {
      debugBody.append(el("p", { className: "muted", text: "No stored memories were relevant enough." }));
    } else {
      const table = el("table", { id: "debug-memories" });
      table.append(el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Memory" }), el("th", { scope: "col", text: "Source" }), el("th", { scope: "col", className: "num", text: "Score" }), el("th", { scope: "col", className: "num", text: "Similarity" }))));
      const tbody = el("tbody");
      for (const memory of memories) {
        const link = el("a", { href: fill(urls.memory_template, memory.id), target: "_blank", rel: "noopener", text: "#" + memory.id });
        tbody.append(el("tr", {},
          el("td", {}, link),
          el("td", { text: memory.source || "" }),
          el("td", { className: "num", text: fmt(memory.score, 4) }),
          el("td", { className: "num", text: fmt(memory.similarity, 2) })));
      }
      table.append(tbody);
      debugBody.append(el("div", { className: "table-wrap" }, table));
    }

    debugBody.append(el("h3", { text: "Pack text" }));
    debugBody.append(context.pack ? el("pre", { id: "debug-pack", text: context.pack }) : el("p", { className: "muted", text: "Empty: this turn went out without stored context." }));
    if (context.last_failure) renderFailure(context.last_failure);
  }

  function renderFailure(failure) {
    debugBody.append(el("h3", { text: "Last failure" }));
    debugBody.append(el("p", { className: "truncated", text: (failure.reason || "failed") + (failure.error ? ": " + failure.error : "") }));
  }

  function ordinal(n) {
    const suffix = n % 10 === 1 && n % 100 !== 11 ? "st" : n % 10 === 2 && n % 100 !== 12 ? "nd" : n % 10 === 3 && n % 100 !== 13 ? "rd" : "th";
    return n + suffix;
  }

  async function loadLastContext() {
    if (!state.sessionId) return renderDebug(null);
    try {
      const response = await fetch(fill(urls.context_template, state.sessionId), { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) {
        state.lastContext = await response.json();
        renderDebug(state.lastContext);
      }
    } catch (err) {
      /* the panel keeps what it showed */
    }
  }

  function setDebug(on, remember) {
    debugSwitch.checked = on;
    debugPanel.hidden = !on;
    layout.classList.toggle("debug-on", on);
    if (remember) {
      try { localStorage.setItem(DEBUG_KEY, on ? "1" : "0"); } catch (err) { /* private mode */ }
    }
    if (on) renderDebug(state.lastContext);
  }

  // ---- Session lifecycle --------------------------------------------------------------------
  function startLifecycle() {
    if (state.lifecycleStarted || !state.sessionId || state.status !== "open") return;
    state.lifecycleStarted = true;
    state.heartbeatTimer = setInterval(() => {
      if (document.visibilityState === "visible") heartbeat();
    }, config.heartbeat_seconds * 1000);
  }

  function stopLifecycle() {
    if (state.heartbeatTimer) clearInterval(state.heartbeatTimer);
    state.heartbeatTimer = null;
    state.lifecycleStarted = false;
  }

  function heartbeat() {
    return postJSON(urls.heartbeat, { session_id: state.sessionId }).then((result) => {
      if (result.status === 409) showClosed("This chat was closed after a period of inactivity. Start a new chat to continue.");
      return result;
    }).catch(() => null);
  }

  document.addEventListener("visibilitychange", () => {
    if (!state.lifecycleStarted) return;
    const visible = document.visibilityState === "visible";
    postJSON(urls.visibility, { session_id: state.sessionId, visible: visible }, { keepalive: !visible }).catch(() => null);
    if (visible) heartbeat(); // back on the tab: the session is fresh again
  });

  // Leaving the page (another chat, another page, closing the tab) closes the session, which
  // starts its summary. keepalive lets the request outlive the page.
  window.addEventListener("pagehide", () => {
    if (!state.lifecycleStarted || state.closeSent) return;
    state.closeSent = true;
    fetch(urls.close, {
      method: "POST",
      keepalive: true,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ session_id: state.sessionId }),
    }).catch(() => null);
  });
  window.addEventListener("pageshow", (event) => {
    if (event.persisted && state.closeSent) window.location.reload();
  });

  // ---- Sending a turn -----------------------------------------------------------------------
  async function ensureSession(firstText) {
    if (state.sessionId) return true;
    const result = await postJSON(urls.new, {});
    if (!result.ok) {
      toast("error", errorMessage(result, "Could not start a chat."));
      return false;
    }
    state.sessionId = result.data.session_id;
    state.status = "open";
    history.replaceState(null, "", fill(urls.chat_template, state.sessionId));
    const label = firstText.length > 48 ? firstText.slice(0, 47) + "…" : firstText;
    heading.textContent = label;
    document.title = label + " · Mnemo";
    const current = sessionList.querySelector('[aria-current="page"]');
    if (current) current.removeAttribute("aria-current");
    const emptyItem = sessionList.querySelector(".empty");
    if (emptyItem) emptyItem.remove();
    const link = el("a", { href: fill(urls.chat_template, state.sessionId), "aria-current": "page" },
      el("span", { className: "session-title", text: label }),
      el("span", { className: "session-meta", text: "Just now · open" }));
    sessionList.prepend(el("li", {}, link));
    endButton.hidden = false;
    startLifecycle();
    return true;
  }

  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const flush = (block) => {
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) return;
      let payload;
      try { payload = JSON.parse(data.join("\n")); } catch (err) { return; }
      onEvent(name, payload);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let index;
      while ((index = buffer.indexOf("\n\n")) >= 0) {
        flush(buffer.slice(0, index));
        buffer = buffer.slice(index + 2);
      }
    }
    if (buffer.trim()) flush(buffer);
  }

  async function sendTurn(text) {
    setBusy(true);
    try {
      if (!(await ensureSession(text))) return false;
      appendMessage("user", text);
      state.history.push({ role: "user", content: text });
      const bubble = appendMessage("assistant", "", { streaming: true });
      const body = bubble.querySelector(".message-body");
      const headers = {
        "Content-Type": "application/json",
        Accept: "text/event-stream",
        "X-CSRFToken": csrfToken(),
        "X-Reggie-Context": "preview",
      };
      const debug = debugWanted();
      if (debug) headers["X-Reggie-Context-Debug"] = "1";
      let response;
      try {
        response = await fetch(urls.stream, {
          method: "POST",
          credentials: "same-origin",
          headers: headers,
          body: JSON.stringify({
            session_id: state.sessionId,
            context_version: "v2",
            messages: state.history.slice(-config.history_limit),
          }),
        });
      } catch (err) {
        state.history.pop();
        failMessage(bubble, "Could not reach Mnemo. Check your connection and try again.");
        return false;
      }
      if (!response.ok) {
        state.history.pop(); // the server stored nothing for a refused turn
        let data = null;
        try { data = await response.json(); } catch (err) { data = null; }
        const message = errorMessage({ status: response.status, data: data }, "The reply failed.");
        failMessage(bubble, message);
        if (response.status === 409) showClosed("This chat is closed. Start a new chat to continue.");
        return false;
      }
      showTopic(topicFromHeaders(response.headers), true);
      let reply = "";
      let failed = null;
      let contextSeen = false;
      await readEvents(response, (name, data) => {
        if (name === "message") {
          reply += data.chunk || "";
          body.textContent = reply;
          scrollToEnd();
        } else if (name === "context") {
          contextSeen = true;
          state.lastContext = data;
          if (debugSwitch.checked) renderDebug(data);
          if (data.topic) showTopic(data.topic, true);
        } else if (name === "error") {
          failed = data.message || "The model failed.";
        }
      });
      if (failed) {
        failMessage(bubble, failed);
      } else {
        finishMessage(bubble);
      }
      if (reply) state.history.push({ role: "assistant", content: reply });
      if (config.verbose_logging) {
        console.info("[mnemo] context", {
          sessionId: state.sessionId,
          topic: state.topic ? state.topic.key : null,
          answerLength: reply.length,
          pack: state.lastContext ? { status: state.lastContext.status, chars: state.lastContext.chars } : null,
        });
      }
      if (debugSwitch.checked && !contextSeen) loadLastContext();
      announce("Reply received.");
      return true;
    } finally {
      setBusy(false);
    }
  }

  composer.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || state.busy || !canSend()) return;
    input.value = "";
    const sent = await sendTurn(text);
    if (!sent && !input.value) input.value = text;
    input.focus();
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });

  // ---- Commit to Memory ---------------------------------------------------------------------
  commitButton.addEventListener("click", async () => {
    if (state.sessionId && state.status !== "open") return;
    if (!state.sessionId) {
      toast("info", "Nothing to commit yet: send a message first.");
      return;
    }
    const label = commitButton.textContent;
    commitButton.disabled = true;
    commitButton.textContent = "Committing…";
    try {
      const result = await postJSON(urls.commit, { chat_session_id: state.sessionId });
      if (result.ok && result.data && result.data.toast) {
        toast(result.data.toast.level, result.data.toast.message);
      } else {
        toast("error", errorMessage(result, "Commit to Memory failed. Try again."));
      }
    } catch (err) {
      toast("error", "Could not reach Mnemo. Try again.");
    } finally {
      commitButton.disabled = Boolean(state.sessionId) && state.status !== "open";
      commitButton.textContent = label;
    }
  });

  // ---- End chat -----------------------------------------------------------------------------
  // Closes the session through the API (which queues its summary) and shows the chat closed.
  endButton.addEventListener("click", async () => {
    if (!state.sessionId || state.status !== "open" || state.busy) return;
    endButton.disabled = true;
    try {
      const result = await postJSON(urls.close, { session_id: state.sessionId });
      if (result.ok || result.status === 409) {
        state.closeSent = true;
        showClosed("You ended this chat. Mnemo is saving its summary to memory; start a new chat to continue.");
        announce("Chat ended.");
      } else {
        toast("error", errorMessage(result, "Could not end the chat. Try again."));
      }
    } catch (err) {
      toast("error", "Could not reach Mnemo. Try again.");
    } finally {
      endButton.disabled = false;
    }
  });

  // ---- Start --------------------------------------------------------------------------------
  const sidebar = document.getElementById("chat-sidebar");
  const sidebarToggle = document.getElementById("sidebar-toggle");
  sidebarToggle.addEventListener("click", () => {
    const expanded = sidebar.classList.toggle("expanded");
    sidebarToggle.setAttribute("aria-expanded", expanded ? "true" : "false");
    sidebarToggle.textContent = expanded ? "Hide" : "Show";
  });

  debugSwitch.addEventListener("change", () => {
    setDebug(debugSwitch.checked, true);
    if (debugSwitch.checked) loadLastContext();
  });

  let storedDebug = null;
  try { storedDebug = localStorage.getItem(DEBUG_KEY); } catch (err) { storedDebug = null; }
  setDebug(storedDebug === null ? config.verbose_logging : storedDebug === "1", false);
  if (config.context && config.context.topic) showTopic(config.context.topic, false);
  if (state.sessionId && state.status === "open") {
    startLifecycle();
    heartbeat();
  } else if (state.sessionId) {
    input.disabled = true;
  }
  setBusy(false);
  scrollToEnd();
})();
