/* toolcrib's page: sign in with an API key, ask a question and watch its run, follow a run paused for
   approval until it resumes, and decide on held calls. Plain DOM, no build step, nothing from outside
   /static. Server text is only ever set with textContent. */
(() => {
  "use strict";

  const KEY = "toolcrib.key";
  const RUN = "toolcrib.run";
  const RUN_POLL_MS = 1500;
  const APPROVALS_POLL_MS = 2000;
  const BY_LABEL = { model: "model", code: "code", policy: "policy", human: "person", cache: "cache", provider: "provider" };
  const BY_HELP = {
    model: "decided by the language model",
    code: "decided by toolcrib's code",
    policy: "decided by the workspace's policy",
    human: "decided by a person",
    cache: "answered from the cache",
  };
  const OUTCOMES = {
    answered: "Answered",
    abstained: "Could not answer",
    clarify: "Needs clarification",
    paused: "Waiting for approval",
    limit: "Stopped at a limit",
  };

  const $ = (id) => document.getElementById(id);

  /** An element with attributes and children; strings become text nodes (never HTML). */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const json = (v) => JSON.stringify(v);
  const callText = (tool, args) =>
    `${tool}(${Object.entries(args || {}).map(([k, v]) => `${k}=${json(v)}`).join(", ")})`;

  function relative(seconds) {
    const s = Math.round(Math.abs(seconds));
    const m = Math.round(s / 60);
    const hrs = Math.round(s / 3600);
    let text;
    if (s < 60) text = `${s} s`;
    else if (m < 60) text = `${m} min`;
    else if (m < 24 * 60) text = m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m / 60} h`;
    else text = hrs % 24 ? `${Math.floor(hrs / 24)} d ${hrs % 24} h` : `${hrs / 24} d`;
    return seconds >= 0 ? `in ${text}` : `${text} ago`;
  }
  const absolute = (unix) => new Date(unix * 1000).toLocaleString(undefined,
    { dateStyle: "medium", timeStyle: "short" });

  // -- state --------------------------------------------------------------------------------------

  const state = {
    key: "",
    me: null,
    gen: 0, // bumped on every new run and on sign-out: late results of an older one are dropped
    run: null, // {id, question, waiting: [proposal ids], timer, controller, resuming}
    approvals: new Map(), // proposal id -> {data, node}
    decided: new Set(), // decided here: a list fetched before the decision must not bring them back
    approvalsTimer: null,
    approvalsBusy: false,
    citations: new Map(),
    citeOpener: null,
    statusTimer: null,
  };

  function say(message, tone) {
    const status = $("status");
    status.textContent = message || "";
    status.dataset.tone = tone || "info";
    clearTimeout(state.statusTimer);
    if (message && (tone || "info") === "info") { // a passing note fades; a problem stays until the next message
      state.statusTimer = setTimeout(() => { if (status.textContent === message) status.textContent = ""; }, 8000);
    }
  }

  // -- the API ------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, reason, retryAfter) {
      super(message);
      this.status = status;
      this.code = code;
      this.reason = reason || "";
      this.retryAfter = retryAfter;
    }
  }

  function describe(err) {
    if (!(err instanceof ApiError)) return String(err && err.message ? err.message : err);
    let text = err.message || `request failed (${err.status})`;
    if (err.retryAfter) text += ` Try again in ${err.retryAfter} s.`;
    return text;
  }

  async function api(method, path, body, opts = {}) {
    const key = opts.key || state.key;
    const headers = { Authorization: `Bearer ${key}`, Accept: opts.stream ? "text/event-stream" : "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, {
        method, headers, cache: "no-store", signal: opts.signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      throw new ApiError(0, "network", "Cannot reach the toolcrib server.");
    }
    if (!res.ok) {
      let error = {};
      try { error = (await res.json()).error || {}; } catch (_) { /* not JSON */ }
      const err = new ApiError(res.status, error.code || `http_${res.status}`,
        error.message || `${res.status} ${res.statusText}`, error.reason, res.headers.get("Retry-After"));
      if (res.status === 401 && !opts.key && state.key) signOut("Your key is no longer accepted; sign in again.");
      throw err;
    }
    return opts.stream ? res : res.json();
  }

  /** Reads an SSE body (``data: {json}`` messages split by blank lines), calling onEvent for each. */
  async function readEvents(res, onEvent) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const flush = (block) => {
      const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) return;
      let event;
      try { event = JSON.parse(data); } catch (_) { return; }
      onEvent(event);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let m;
      while ((m = /\r?\n\r?\n/.exec(buffer)) !== null) {
        flush(buffer.slice(0, m.index));
        buffer = buffer.slice(m.index + m[0].length);
      }
    }
    buffer += decoder.decode();
    if (buffer.trim()) flush(buffer);
  }

  // -- signing in ---------------------------------------------------------------------------------

  async function signIn(key, quiet) {
    const me = await api("GET", "/v1/me", undefined, { key });
    state.key = key;
    state.me = me;
    sessionStorage.setItem(KEY, key);
    $("who-name").textContent = me.name || me.user;
    $("who-meta").textContent = [me.user, me.role, me.tenant].filter(Boolean).join(" · ");
    $("who-approver").hidden = !me.approver;
    $("who").hidden = false;
    $("signin-view").hidden = true;
    $("app-view").hidden = false;
    $("key-input").value = "";
    $("approvals-intro").textContent = me.approver
      ? "Calls held for a person's approval that you may decide on. Check the exact call, where each value " +
        "came from and any warnings before you approve it; an approval lets that call run once."
      : "Calls held for approval appear here for the people who may decide on them. You do not approve calls " +
        "in this workspace: calls you ask for wait for an approver, and your run continues by itself.";
    selectTab("ask", false);
    if (!quiet) say(`Signed in as ${me.name || me.user}.`);
    startApprovalsPolling();
    const saved = sessionStorage.getItem(RUN);
    if (saved) restoreRun(saved);
    else $("question").focus();
  }

  function signOut(message) {
    state.gen += 1;
    stopRun();
    stopApprovalsPolling();
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(RUN);
    state.key = "";
    state.me = null;
    state.approvals.clear();
    state.decided.clear();
    $("proposals").replaceChildren();
    $("decided").replaceChildren();
    $("decided-section").hidden = true;
    $("approvals-empty").hidden = true;
    $("proposals").removeAttribute("data-loaded");
    $("approvals-count").hidden = true;
    clearRunView();
    $("question").value = "";
    $("who").hidden = true;
    $("app-view").hidden = true;
    $("signin-view").hidden = false;
    $("signin-error").textContent = "";
    say(message || "Signed out.");
    $("key-input").focus();
  }

  // -- tabs ---------------------------------------------------------------------------------------

  function selectTab(name, focus) {
    for (const tab of ["ask", "approvals"]) {
      const button = $(`tab-${tab}`);
      const on = tab === name;
      button.setAttribute("aria-selected", String(on));
      button.tabIndex = on ? 0 : -1;
      $(`${tab}-view`).hidden = !on;
      if (on && focus) button.focus();
    }
    if (name === "approvals") refreshApprovals();
  }

  // -- a run --------------------------------------------------------------------------------------

  function clearRunView() {
    $("steps").replaceChildren();
    $("steps-empty").hidden = false;
    $("run-state").hidden = true;
    $("waiting").hidden = true;
    $("held-list").replaceChildren();
    $("waiting-actions").replaceChildren();
    $("answer").hidden = true;
    $("answer-text").replaceChildren();
    $("answer-extra").replaceChildren();
    closeCitation(false);
    state.citations.clear();
  }

  function stopRun() {
    const run = state.run;
    if (!run) return;
    clearTimeout(run.timer);
    if (run.controller) run.controller.abort();
    state.run = null;
  }

  function setRunState(text, tone) {
    const node = $("run-state");
    node.textContent = text;
    node.dataset.tone = tone || "info";
    node.hidden = !text;
  }

  function setBusy(busy) {
    $("ask-button").disabled = busy;
    $("ask-button").textContent = busy ? "Running…" : "Ask";
  }

  /** "edited by ada: quantity 300 → 3 (“reason”)": what an approver changed before approving. */
  function editText(edit) {
    const changes = Object.entries(edit.changes || {}).map(([name, c]) => `${name} ${json(c.from)} → ${json(c.to)}`);
    const who = edit.by_name && edit.by_name !== edit.by ? `${edit.by_name} (${edit.by})` : edit.by;
    return `edited by ${who}: ${changes.join(", ")}${edit.reason ? ` (“${edit.reason}”)` : ""}`;
  }

  function badge(decidedBy) {
    const by = BY_LABEL[decidedBy] ? decidedBy : "code";
    return h("span", { class: `badge by-${by}`, title: BY_HELP[by], "data-testid": "decided-by",
      text: BY_LABEL[by] });
  }

  /** One step of the run (a typed toolcrib event) in the steps list. */
  function addStep(event) {
    $("steps-empty").hidden = true;
    const details = [];
    const meta = [h("code", { class: "kind", text: event.kind })];
    if (event.effect) meta.push(h("span", { class: `effect effect-${event.effect}`, text: event.effect }));
    if (event.status) meta.push(h("span", { text: event.status }));
    if (event.error_code) meta.push(h("span", { class: "bad", text: event.error_code }));
    if (event.proposal_id) meta.push(h("span", { text: `proposal ${event.proposal_id}` }));
    if (event.tool && event.arguments) {
      details.push(h("code", { class: "call", "data-testid": "step-call", text: callText(event.tool, event.arguments) }));
    }
    const d = event.detail && typeof event.detail === "object" ? event.detail : {};
    switch (event.kind) {
      case "tools_offered": {
        const offered = d.offered || [];
        const withheld = Object.entries(d.withheld || {});
        details.push(h("details", { class: "small muted" },
          h("summary", { text: `${offered.length} offered, ${withheld.length} withheld` }),
          h("div", { text: `offered: ${offered.join(", ") || "none"}` }),
          withheld.map(([name, why]) => h("div", { text: `withheld ${name}: ${why}` }))));
        break;
      }
      case "model_decision":
        if (Array.isArray(d.tool_calls)) {
          for (const c of d.tool_calls) details.push(h("code", { class: "call", text: callText(c.name, c.arguments) }));
        } else if (typeof d.text === "string" && d.text) {
          details.push(h("div", { class: "small quote", text: d.text.length > 240 ? `${d.text.slice(0, 240)}…` : d.text }));
        }
        break;
      case "call_executed":
        for (const a of Array.isArray(d.artifacts) ? d.artifacts : []) {
          details.push(h("button", { type: "button", class: "artifact", "data-testid": "artifact",
            text: `⤓ ${a.name} (${a.bytes} bytes)`, onclick: () => download(event.run_id, a) }));
        }
        break;
      case "call_approved":
        if (d.approver) details.push(h("div", { class: "small", text: `approved by ${d.approver}` }));
        if (d.edited) details.push(h("div", { class: "small edit-note", "data-testid": "step-edit", text: editText(d.edited) }));
        break;
      case "citation_check":
        if ((event.citations || []).length) details.push(h("div", { class: "small muted",
          text: `kept: ${event.citations.join(", ")}` }));
        if ((d.removed || []).length) details.push(h("div", { class: "small bad",
          text: `removed: ${d.removed.map((r) => (typeof r === "string" ? r : json(r))).join(", ")}` }));
        break;
      default:
        break;
    }
    for (const w of Array.isArray(d.warnings) ? d.warnings : []) {
      details.push(h("div", { class: "small warn-text", text: `⚠ ${w}` }));
    }
    const item = h("li", { class: "step", "data-testid": "step", "data-kind": event.kind,
      "data-decided-by": event.decided_by || "" },
      badge(event.decided_by),
      h("div", { class: "step-body" },
        h("div", { class: "step-title", text: event.title || event.kind }),
        h("div", { class: "step-meta small muted" }, meta.flatMap((m, i) => (i ? [" · ", m] : [m]))),
        details));
    $("steps").append(item);
    item.scrollIntoView({ block: "nearest" });
  }

  /** Downloads a file a tool of the run produced (the request needs the key, so not a plain link). */
  async function download(runId, artifact) {
    try {
      const res = await api("GET", `/v1/runs/${encodeURIComponent(runId)}/artifacts/${artifact.id.split("/")
        .map(encodeURIComponent).join("/")}`, undefined, { stream: true });
      const url = URL.createObjectURL(await res.blob());
      const link = h("a", { href: url, download: artifact.name });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) {
      say(`Could not download ${artifact.name}: ${describe(err)}`, "bad");
    }
  }

  function addDivider(text) {
    $("steps").append(h("li", { class: "step-divider", role: "separator", text }));
  }

  async function ask(question, mode) {
    stopRun();
    clearRunView();
    const gen = ++state.gen;
    const run = { id: null, question, waiting: [], timer: null, controller: new AbortController(), resuming: false,
      traces: new Set() };
    state.run = run;
    sessionStorage.removeItem(RUN);
    setBusy(true);
    setRunState("Running…");
    say("Asking…");
    try {
      const res = await api("POST", "/v1/ask", { question, mode: mode || null },
        { stream: true, signal: run.controller.signal });
      await consume(res, run, gen);
    } catch (err) {
      if (gen !== state.gen || (err && err.name === "AbortError")) return;
      setRunState(`The question was not run: ${describe(err)}`, "bad");
      say(`The question was not run: ${describe(err)}`, "bad");
    } finally {
      if (gen === state.gen) setBusy(false);
    }
  }

  /** Shows a run's stream as it arrives, then its Answer (or its pause for approval). */
  async function consume(res, run, gen) {
    let answer = null;
    let finished = null;
    let failed = null;
    await readEvents(res, (event) => {
      if (gen !== state.gen) return;
      if (event.type === "RUN_STARTED" && event.threadId) run.id = event.threadId;
      if (event.rawEvent) {
        run.traces.add(event.rawEvent.trace_id);
        addStep(event.rawEvent);
      }
      if (event.type === "CUSTOM" && event.name === "toolcrib.answer") answer = event.value;
      else if (event.type === "RUN_FINISHED") finished = event;
      else if (event.type === "RUN_ERROR") failed = event;
    });
    if (gen !== state.gen) return;
    if (failed) {
      setRunState(`The run failed: ${failed.message || failed.code}`, "bad");
      say(`The run failed: ${failed.message || failed.code}`, "bad");
    } else if (answer) {
      const interrupts = finished && finished.outcome && finished.outcome.type === "interrupt"
        ? finished.outcome.interrupts.map((i) => i.id) : [];
      settle(answer, interrupts, run, gen);
    } else if (run.id) {
      await recover(run, gen); // the stream was cut; the run is recorded all the same
    } else {
      setRunState("The stream ended before the run started; try again.", "bad");
    }
  }

  function settle(answer, interrupts, run, gen) {
    run.id = answer.run_id || run.id;
    if (answer.outcome === "paused") {
      const ids = interrupts.length ? interrupts
        : (answer.pending || []).map((p) => p.proposal_id).filter(Boolean);
      wait(run, ids, answer.pending || [], gen);
      return;
    }
    sessionStorage.removeItem(RUN);
    $("waiting").hidden = true;
    showAnswer(answer);
  }

  async function recover(run, gen) {
    try {
      const record = await api("GET", `/v1/runs/${encodeURIComponent(run.id)}`);
      if (gen !== state.gen) return;
      if (record.answer) settle(record.answer, [], run, gen);
      else setRunState("The run did not finish.", "bad");
    } catch (err) {
      if (gen === state.gen) setRunState(`The run's stream was cut: ${describe(err)}`, "bad");
    }
  }

  /** The run paused for approval: show the held calls and poll the run until they are decided. */
  function wait(run, ids, pending, gen) {
    run.waiting = ids;
    sessionStorage.setItem(RUN, run.id);
    $("answer").hidden = true;
    $("waiting").hidden = false;
    $("waiting").dataset.state = "waiting";
    $("waiting-title").textContent = "Waiting for approval";
    $("waiting-actions").replaceChildren();
    const list = $("held-list");
    list.replaceChildren();
    for (const id of ids) {
      const call = pending.find((p) => p.proposal_id === id) || {};
      list.append(h("li", { class: "held-call", "data-testid": "held-call", "data-proposal": id },
        h("div", {}, h("code", { class: "call", text: call.name ? callText(call.name, call.arguments) : id }),
          h("div", { class: "small muted", text: `proposal ${id}` })),
        h("span", { class: "pill pill-pending", "data-testid": "held-status", text: "waiting for approval" })));
    }
    setRunState("");
    waitingNote("This run is paused: the call below changes something, so a person who may approve it has to " +
      "look at it first. This page continues the run by itself once every held call is approved.");
    say(`Run paused: ${ids.length === 1 ? "a call is" : `${ids.length} calls are`} waiting for approval.`);
    const tick = () => poll(run, gen);
    run.timer = setTimeout(tick, RUN_POLL_MS);
  }

  function waitingNote(text) {
    $("waiting-note").textContent = text;
  }

  async function poll(run, gen) {
    if (gen !== state.gen || state.run !== run) return;
    let record;
    try {
      record = await api("GET", `/v1/runs/${encodeURIComponent(run.id)}`);
    } catch (err) {
      if (gen !== state.gen) return;
      if (err instanceof ApiError && err.status === 404) {
        waitingNote("This run is no longer available.");
        sessionStorage.removeItem(RUN);
        return;
      }
      waitingNote(`Waiting for approval (cannot check just now: ${describe(err)}).`);
      run.timer = setTimeout(() => poll(run, gen), RUN_POLL_MS * 2);
      return;
    }
    if (gen !== state.gen || state.run !== run) return;
    const proposals = record.proposals.filter((p) => run.waiting.includes(p.id));
    for (const p of proposals) {
      const item = document.querySelector(`.held-call[data-proposal="${CSS.escape(p.id)}"]`);
      const pill = item && item.querySelector("[data-testid=held-status]");
      if (!pill) continue;
      const status = p.edit ? `edited and ${p.edit.status}` : p.status;
      pill.textContent = p.status === "pending" ? "waiting for approval"
        : p.decided_by ? `${status} by ${p.decided_by}` : status;
      pill.className = `pill pill-${p.edit ? p.edit.status : p.status}`;
      const why = p.edit ? editText(p.edit) : p.reason ? `“${p.reason}”` : "";
      if (why && !item.querySelector("[data-testid=held-edit]")) {
        item.firstChild.append(h("div", { class: "small edit-note", "data-testid": "held-edit", text: why }));
      }
    }
    if (record.outcome !== "paused") { // continued elsewhere (another tab, the command line)
      const later = (record.events || []).filter((e) => !run.traces.has(e.trace_id));
      if (later.length) addDivider("Continued elsewhere");
      for (const e of later) { run.traces.add(e.trace_id); addStep(e); }
      settle(record.answer, [], run, gen);
      return;
    }
    const ended = (status) => status === "rejected" || status === "expired";
    const refused = proposals.filter((p) => ended(p.status) || (p.edit && ended(p.edit.status)));
    if (refused.length) {
      const words = refused.map((p) => (p.edit ? `${p.tool}, as edited by ${p.edit.by}, ${p.edit.status === "expired"
        ? "expired before the run continued" : "was revoked"}` : p.status === "expired" ? `${p.tool} expired with no decision`
        : `${p.tool} was ${p.status}${p.decided_by ? ` by ${p.decided_by}` : ""}`) + (p.reason ? `: “${p.reason}”` : ""));
      $("waiting").dataset.state = "refused";
      $("waiting-title").textContent = "Not approved";
      waitingNote(`${words.join("; ")}. The call will not run; you can finish the run without it.`);
      say(`${words.join("; ")}.`, "bad");
      $("waiting-actions").replaceChildren(
        h("button", { type: "button", class: "btn", "data-testid": "finish-run", text: "Finish the run without it",
          onclick: (ev) => { ev.currentTarget.disabled = true; resume(run, gen); } }));
      return;
    }
    if (proposals.length && proposals.every((p) => p.status === "approved" || (p.edit && p.edit.status === "approved"))) {
      resume(run, gen);
      return;
    }
    run.timer = setTimeout(() => poll(run, gen), RUN_POLL_MS);
  }

  async function resume(run, gen) {
    if (run.resuming) return;
    run.resuming = true;
    $("waiting").dataset.state = "resuming";
    $("waiting-title").textContent = "Continuing the run";
    waitingNote("Approved: the call runs now, once.");
    say("Continuing the run…");
    addDivider("Resumed");
    setBusy(true);
    try {
      const res = await api("POST", `/v1/runs/${encodeURIComponent(run.id)}/resume`, undefined,
        { stream: true, signal: run.controller.signal });
      await consume(res, run, gen);
    } catch (err) {
      if (gen !== state.gen || (err && err.name === "AbortError")) return;
      if (err instanceof ApiError && err.status === 404) await recover(run, gen); // resumed elsewhere
      else setRunState(`The run could not continue: ${describe(err)}`, "bad");
    } finally {
      run.resuming = false;
      if (gen === state.gen) setBusy(false);
    }
  }

  async function restoreRun(runId) {
    const gen = ++state.gen;
    try {
      const record = await api("GET", `/v1/runs/${encodeURIComponent(runId)}`);
      if (gen !== state.gen) return;
      clearRunView();
      const run = { id: runId, question: record.question, waiting: [], timer: null,
        controller: new AbortController(), resuming: false, traces: new Set() };
      state.run = run;
      $("question").value = record.question || "";
      for (const event of record.events || []) {
        run.traces.add(event.trace_id);
        addStep(event);
      }
      const answer = record.answer || {};
      if (record.outcome === "paused") {
        const ids = (answer.pending || []).map((p) => p.proposal_id).filter(Boolean);
        wait(run, ids, answer.pending || [], gen);
      } else {
        sessionStorage.removeItem(RUN);
        if (record.answer) showAnswer(record.answer);
      }
    } catch (_) {
      sessionStorage.removeItem(RUN);
    }
  }

  // -- the answer and its citations ---------------------------------------------------------------

  function showAnswer(answer) {
    state.citations = new Map((answer.citations || []).map((c) => [c.id, c]));
    const text = $("answer-text");
    text.replaceChildren();
    const marker = /\[([^\[\]\s]+)\]/g;
    const body = answer.text || "";
    let last = 0;
    let m;
    while ((m = marker.exec(body)) !== null) {
      if (!state.citations.has(m[1])) continue;
      text.append(body.slice(last, m.index), citeButton(m[1], "cite"));
      last = m.index + m[0].length;
    }
    text.append(body.slice(last));
    const outcome = $("answer-outcome");
    outcome.textContent = OUTCOMES[answer.outcome] || answer.outcome;
    outcome.className = `outcome outcome-${answer.outcome}`;
    $("answer").dataset.outcome = answer.outcome;

    const extra = $("answer-extra");
    extra.replaceChildren();
    if (state.citations.size) {
      extra.append(h("div", { class: "sources" }, h("span", { class: "small muted", text: "Sources: " }),
        [...state.citations.keys()].map((id) => citeButton(id, "source"))));
    }
    const lines = [];
    for (const c of answer.executed || []) {
      lines.push(h("li", {}, h("span", { class: "pill pill-executed", text: "ran" }), " ",
        h("code", { text: callText(c.name, c.arguments) })));
    }
    for (const c of answer.refused || []) {
      const why = c.error && (c.error.message || c.error.code) ? c.error.message || c.error.code : c.status;
      lines.push(h("li", {}, h("span", { class: "pill pill-rejected", text: "refused" }), " ",
        h("code", { text: callText(c.name, c.arguments) }), h("span", { class: "small muted", text: ` ${why || ""}` })));
    }
    if (lines.length) extra.append(h("ul", { class: "calls", "data-testid": "answer-calls" }, lines));
    for (const flag of answer.flags || []) extra.append(h("p", { class: "warn-text small", text: `⚠ ${flag}` }));
    $("answer").hidden = false;
    setRunState("");
    say(`${OUTCOMES[answer.outcome] || "Finished"}.`);
  }

  function citeButton(id, where) {
    return h("button", { type: "button", class: "cite", "data-testid": where === "cite" ? "citation" : "source",
      "data-citation": id, "aria-haspopup": "true", "aria-controls": "citation-panel",
      title: "Show the cited source", text: id, onclick: (ev) => openCitation(id, ev.currentTarget) });
  }

  function openCitation(id, opener) {
    const c = state.citations.get(id);
    if (!c) return;
    state.citeOpener = opener;
    const label = { tool: "Tool result", web: "Web result" }[c.kind] || "Passage";
    $("citation-title").textContent = `${label} ${c.id}`;
    $("citation-source").textContent = c.kind === "tool" ? `What the tool ${c.source} returned in this run.`
      : c.kind === "web" ? `From the web page ${c.source} (written by others; not checked by toolcrib).`
      : `From ${c.source}.`;
    let snippet = c.snippet || "";
    if (c.kind === "tool") {
      try { snippet = JSON.stringify(JSON.parse(snippet), null, 2); } catch (_) { /* not JSON: as is */ }
    }
    $("citation-snippet").textContent = snippet;
    const panel = $("citation-panel");
    panel.dataset.citation = id;
    panel.hidden = false;
    panel.focus();
  }

  function closeCitation(restore) {
    const panel = $("citation-panel");
    if (panel.hidden) return;
    panel.hidden = true;
    if (restore && state.citeOpener && state.citeOpener.isConnected) state.citeOpener.focus();
    state.citeOpener = null;
  }

  // -- approvals ----------------------------------------------------------------------------------

  function startApprovalsPolling() {
    stopApprovalsPolling();
    const loop = async () => {
      await refreshApprovals();
      if (state.key) state.approvalsTimer = setTimeout(loop, APPROVALS_POLL_MS);
    };
    loop();
  }

  function stopApprovalsPolling() {
    clearTimeout(state.approvalsTimer);
    state.approvalsTimer = null;
  }

  async function refreshApprovals() {
    if (!state.key || state.approvalsBusy) return;
    state.approvalsBusy = true;
    const key = state.key;
    try {
      const list = await api("GET", "/v1/proposals");
      if (key !== state.key) return;
      renderApprovals(list);
      $("approvals-updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (key === state.key) $("approvals-updated").textContent = `Could not refresh: ${describe(err)}`;
    } finally {
      state.approvalsBusy = false;
    }
  }

  function renderApprovals(list) {
    const ul = $("proposals");
    const seen = new Set();
    for (const p of list) {
      if (state.decided.has(p.id)) continue;
      seen.add(p.id);
      const have = state.approvals.get(p.id);
      if (have && have.data.hash === p.hash) {
        have.data = p;
        updateTimes(have.node, p);
        continue;
      }
      const node = proposalCard(p);
      if (have) have.node.replaceWith(node);
      else ul.append(node);
      state.approvals.set(p.id, { data: p, node });
    }
    for (const [id, entry] of state.approvals) {
      if (seen.has(id)) continue;
      if (entry.node.contains(document.activeElement)) { // do not pull it from under the keyboard: say so instead
        entry.node.dataset.gone = "true";
        entry.node.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
        entry.node.querySelector("[data-testid=decision-error]").textContent =
          "This call is no longer waiting: it was decided elsewhere or it expired.";
      } else {
        entry.node.remove();
        state.approvals.delete(id);
      }
    }
    const n = [...state.approvals.values()].filter((e) => !e.node.dataset.gone).length;
    const count = $("approvals-count");
    count.textContent = String(n);
    count.hidden = n === 0;
    count.setAttribute("aria-label", `${n} waiting`);
    const empty = $("approvals-empty");
    empty.textContent = state.me && state.me.approver ? "Nothing is waiting for your decision."
      : "Nothing to decide: you do not approve calls in this workspace.";
    empty.hidden = n > 0;
    ul.dataset.loaded = "true";
    updateBulk();
  }

  function updateTimes(node, p) {
    const now = Date.now() / 1000;
    const expires = node.querySelector("[data-testid=expires]");
    expires.textContent = p.expires_at <= now ? "expired" : `expires ${relative(p.expires_at - now)}`;
    node.querySelector("[data-testid=asked]").textContent = `asked ${relative(p.created_at - now)}`;
  }

  /** A decision made here: listed under "Decided in this session", its card removed. */
  function decided(p, status, args) {
    const who = p.requester_name || p.requester;
    const message = status === "rejected" ? `Rejected ${p.tool} for ${who}.`
      : `${status === "edited" ? "Edited and approved" : "Approved"} ${callText(p.tool, args)} for ${who}: it will ` +
        "run once when their run continues.";
    say(message);
    $("decided").prepend(h("li", { "data-testid": "decision", "data-status": status },
      h("span", { class: `pill pill-${status === "rejected" ? "rejected" : "approved"}`,
        text: status === "edited" ? "edited and approved" : status }),
      " ", h("code", { text: callText(p.tool, args) }),
      h("span", { class: "small muted", text: ` for ${who} · ${new Date().toLocaleTimeString()}` })));
    $("decided-section").hidden = false;
    state.decided.add(p.id);
    const entry = state.approvals.get(p.id);
    const card = entry && entry.node;
    const next = card && (card.nextElementSibling || card.previousElementSibling);
    if (card) card.remove();
    state.approvals.delete(p.id);
    renderApprovals([...state.approvals.values()].map((e) => e.data));
    (next ? next.querySelector("[data-testid=approve]") : $("approvals-refresh")).focus();
  }

  /** The bulk bar: shown while any proposal is selected. */
  function updateBulk() {
    const selected = [...state.approvals.values()].filter((e) => e.node.querySelector("[data-testid=select]").checked);
    $("bulk").hidden = selected.length === 0;
    $("bulk-count").textContent = `${selected.length} selected`;
    return selected;
  }

  /** Approve or reject every selected proposal in one action; each is checked and recorded on its own. */
  async function decideSelected(reject) {
    const selected = updateBulk();
    if (!selected.length) return;
    const body = { action: reject ? "reject" : "approve", reason: $("bulk-reason").value.trim(),
      proposals: selected.map((e) => ({ id: e.data.id, hash: e.node.querySelector("[data-testid=hash]").textContent })) };
    try {
      const res = await api("POST", "/v1/proposals/decide", body);
      res.results.forEach((r, i) => {
        const entry = selected[i];
        if (r.status === "refused") {
          entry.node.querySelector("[data-testid=decision-error]").textContent =
            `Not ${reject ? "rejected" : "approved"}: ${r.error.message} (${r.error.reason})`;
        } else {
          decided(entry.data, r.status, entry.data.arguments);
        }
      });
      $("bulk-reason").value = "";
    } catch (err) {
      say(`Not decided: ${describe(err)}`, "bad");
    }
    updateBulk();
  }

  function proposalCard(p) {
    const titleId = `proposal-${p.id}-title`;
    const provenance = p.provenance || {};
    const rows = Object.entries(p.arguments || {}).map(([name, value]) => {
      const sources = provenance[name];
      const from = Array.isArray(sources) && sources.length
        ? h("td", { "data-testid": "arg-source" }, sources.map((s) => h("span", { class: "source-label", text: s })))
        : h("td", { "data-testid": "arg-source" }, h("span", { class: "source-label source-model",
          text: "written by the model" }));
      return h("tr", { "data-testid": "arg-row", "data-argument": name },
        h("th", { scope: "row" }, h("code", { text: name })),
        h("td", { "data-testid": "arg-value" }, h("code", { text: json(value) })), // exact: "3" and 3 differ
        from);
    });
    const warnings = (p.warnings || []).length
      ? h("div", { class: "warnings", "data-testid": "warnings" },
        h("strong", { text: p.warnings.length === 1 ? "Warning" : `${p.warnings.length} warnings` }),
        h("ul", {}, p.warnings.map((w) => h("li", { text: w }))))
      : null;
    const checks = (p.checks || []).length
      ? h("details", { class: "checks small", "data-testid": "checks" },
        h("summary", { text: (p.warnings || []).length ? "Which checks ran" : "Why no warning" }),
        h("ul", {}, p.checks.map((c) => h("li", { text: c }))))
      : null;
    const errorBox = h("p", { class: "error", role: "alert", "data-testid": "decision-error" });
    const reason = h("input", { type: "text", id: `reason-${p.id}`, maxlength: "2000", "data-testid": "reject-reason",
      autocomplete: "off" });
    const rejectForm = h("form", { class: "reject-form", "data-testid": "reject-form", hidden: true },
      h("label", { for: `reason-${p.id}`, text: "Reason for rejecting (optional, recorded in the audit)" }),
      h("div", { class: "reject-row" }, reason,
        h("button", { type: "submit", class: "btn btn-danger", "data-testid": "confirm-reject", text: "Reject call" }),
        h("button", { type: "button", class: "btn btn-quiet", text: "Cancel",
          onclick: () => { rejectForm.hidden = true; rejectButton.focus(); } })));
    const approveButton = h("button", { type: "button", class: "btn btn-primary", "data-testid": "approve",
      text: "Approve", "aria-describedby": titleId });
    const rejectButton = h("button", { type: "button", class: "btn btn-danger-quiet", "data-testid": "reject",
      text: "Reject…", "aria-describedby": titleId, "aria-expanded": "false" });
    const editButton = h("button", { type: "button", class: "btn", "data-testid": "edit",
      text: "Edit…", "aria-describedby": titleId, "aria-expanded": "false" });
    const inputs = Object.entries(p.arguments || {}).map(([name, value]) => {
      const input = h("input", { type: "text", id: `edit-${p.id}-${name}`, "data-argument": name, value: json(value),
        autocomplete: "off", "data-testid": "edit-value" });
      return [name, value, input];
    });
    const editReason = h("input", { type: "text", id: `edit-reason-${p.id}`, maxlength: "2000",
      "data-testid": "edit-reason", autocomplete: "off" });
    const editForm = h("form", { class: "edit-form", "data-testid": "edit-form", hidden: true },
      h("p", { class: "small", text: "Change values as JSON (3, \"F2\"). The changed call becomes a new proposal, " +
        "approved by you in the same act; the original is recorded as superseded." }),
      inputs.map(([name, , input]) => h("div", { class: "edit-row" },
        h("label", { for: input.id, text: `New value of ${name}` }), input)),
      h("label", { for: editReason.id, text: "Reason for the change (the requester and the model see it)" }),
      editReason,
      h("div", { class: "reject-row" },
        h("button", { type: "submit", class: "btn btn-primary", "data-testid": "confirm-edit", text: "Approve edited call" }),
        h("button", { type: "button", class: "btn btn-quiet", text: "Cancel",
          onclick: () => { editForm.hidden = true; editButton.focus(); } })));
    const select = h("input", { type: "checkbox", id: `select-${p.id}`, "data-testid": "select",
      onchange: updateBulk });
    const hash = h("code", { class: "hash", "data-testid": "hash", text: p.hash });
    const card = h("li", { class: "card proposal", "data-testid": "proposal", "data-proposal": p.id,
      "aria-labelledby": titleId },
      h("div", { class: "proposal-head" },
        h("h2", { id: titleId },
          h("code", { class: "tool", "data-testid": "proposal-tool", text: p.tool })),
        h("span", { class: `effect effect-${p.effect || "unknown"}`, "data-testid": "effect",
          title: "effect class", text: p.effect || "unknown effect" }),
        h("span", { class: "proposal-when small muted" },
          h("span", { "data-testid": "asked" }), " · ",
          h("time", { "data-testid": "expires", datetime: new Date(p.expires_at * 1000).toISOString(),
            title: `expires ${absolute(p.expires_at)}` }))),
      h("p", { class: "requester" }, "Requested by ",
        h("strong", { "data-testid": "requester", text: p.requester_name || p.requester }),
        h("span", { class: "muted", text: ` (${p.requester})` })),
      warnings,
      h("div", { class: "question-box" }, h("span", { class: "label", text: "Their question" }),
        h("q", { "data-testid": "proposal-question", text: p.question || "(no question recorded)" })),
      h("table", { class: "args", "data-testid": "arguments" },
        h("caption", { text: "The exact call" }),
        h("colgroup", {}, h("col", { class: "col-arg" }), h("col", { class: "col-value" }), h("col", {})),
        h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "Argument" }), h("th", { scope: "col", text: "Value" }),
          h("th", { scope: "col", text: "Where it came from" }))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: "3", class: "muted", text: "no arguments" })))),
      checks,
      h("dl", { class: "binding small" },
        h("dt", { text: "What it will change" }),
        h("dd", { "data-testid": "resource-version" },
          p.resource_version ? `acts on resource version ${p.resource_version}: if that changes before the call runs, ` +
            "it is refused" : "no versioned resource"),
        h("dt", { text: "Proposal" }), h("dd", {}, h("code", { text: p.id }), ` · policy version ${p.policy_version}`),
        h("dt", { text: "Call hash" }), h("dd", {}, hash)),
      h("div", { class: "decide" }, approveButton, editButton, rejectButton,
        h("span", { class: "select-row" }, select, h("label", { for: select.id, text: "Select" }))),
      rejectForm, editForm, errorBox);
    updateTimes(card, p);

    const decide = async (reject, edit) => {
      const buttons = card.querySelectorAll("button");
      buttons.forEach((b) => { b.disabled = true; });
      errorBox.textContent = "";
      try {
        const path = `/v1/proposals/${encodeURIComponent(p.id)}/${edit ? "edit" : reject ? "reject" : "approve"}`;
        const body = edit ? { hash: hash.textContent, arguments: edit, reason: editReason.value.trim() }
          : { hash: hash.textContent, reason: reject ? reason.value.trim() : "" };
        const res = await api("POST", path, body);
        decided(p, reject ? "rejected" : edit ? "edited" : "approved", edit ? res.arguments : p.arguments);
      } catch (err) {
        const why = err instanceof ApiError && err.reason ? ` (${err.reason})` : "";
        errorBox.textContent = `Not ${reject ? "rejected" : "approved"}: ${describe(err)}${why}`;
        say(errorBox.textContent, "bad");
        buttons.forEach((b) => { b.disabled = false; });
        if (err instanceof ApiError && err.reason === "stale") refreshApprovals();
        else if (err instanceof ApiError && ["expired", "used", "rejected", "not_found"].includes(err.reason)) {
          approveButton.disabled = true;
          rejectButton.disabled = true;
        }
      }
    };
    approveButton.addEventListener("click", () => decide(false));
    editButton.addEventListener("click", () => {
      editForm.hidden = !editForm.hidden;
      editButton.setAttribute("aria-expanded", String(!editForm.hidden));
      if (!editForm.hidden) inputs[0][2].focus();
    });
    editForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const changes = {};
      for (const [name, value, input] of inputs) {
        let v;
        try { v = JSON.parse(input.value); } catch { v = input.value; } // plain text is a string value
        if (json(v) !== json(value)) changes[name] = v;
      }
      if (!Object.keys(changes).length) {
        errorBox.textContent = "Nothing was changed: approve the call as it is instead.";
        return;
      }
      decide(false, changes);
    });
    rejectButton.addEventListener("click", () => {
      rejectForm.hidden = !rejectForm.hidden;
      rejectButton.setAttribute("aria-expanded", String(!rejectForm.hidden));
      if (!rejectForm.hidden) reason.focus();
    });
    rejectForm.addEventListener("submit", (ev) => { ev.preventDefault(); decide(true); });
    rejectForm.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { rejectForm.hidden = true; rejectButton.setAttribute("aria-expanded", "false"); rejectButton.focus(); }
    });
    return card;
  }

  // -- wiring -------------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const key = $("key-input").value.trim();
      const error = $("signin-error");
      error.textContent = "";
      if (!key) { error.textContent = "Enter your API key."; $("key-input").focus(); return; }
      $("sign-in").disabled = true;
      try {
        await signIn(key, false);
      } catch (err) {
        error.textContent = err instanceof ApiError && err.status === 401
          ? "That key was not accepted. Check it, or ask for a new one." : describe(err);
        $("key-input").focus();
      } finally {
        $("sign-in").disabled = false;
      }
    });
    $("sign-out").addEventListener("click", () => signOut());

    $("bulk-approve").addEventListener("click", () => decideSelected(false));
    $("bulk-reject").addEventListener("click", () => decideSelected(true));
    $("ask-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const question = $("question").value.trim();
      if (!question) { say("Type a question first.", "bad"); $("question").focus(); return; }
      if ($("ask-button").disabled) return;
      ask(question, $("mode").value);
    });
    $("question").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $("ask-form").requestSubmit();
      }
    });

    for (const name of ["ask", "approvals"]) $(`tab-${name}`).addEventListener("click", () => selectTab(name, false));
    document.querySelector("[role=tablist]").addEventListener("keydown", (ev) => {
      if (!["ArrowLeft", "ArrowRight", "Home", "End"].includes(ev.key)) return;
      ev.preventDefault();
      const onAsk = $("tab-ask").getAttribute("aria-selected") === "true";
      const target = ev.key === "Home" ? "ask" : ev.key === "End" ? "approvals" : onAsk ? "approvals" : "ask";
      selectTab(target, true);
    });
    $("approvals-refresh").addEventListener("click", () => refreshApprovals());
    $("citation-close").addEventListener("click", () => closeCitation(true));
    $("citation-panel").addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeCitation(true); });

    const key = sessionStorage.getItem(KEY);
    if (key) {
      signIn(key, true).catch(() => {
        sessionStorage.removeItem(KEY);
        $("signin-error").textContent = "Your saved key is no longer accepted; sign in again.";
      });
    } else {
      $("key-input").focus();
    }
  });
})();
