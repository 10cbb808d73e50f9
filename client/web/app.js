// The page of `stalwart serve`: talk to a session, follow its answer as it is written, approve its tool calls.
// Plain JavaScript, no build step. Events come from GET /api/runs/{id}/events (Server-Sent Events, read with
// fetch so the bearer token can be sent); each event's id is an offset, sent back as Last-Event-ID to resume.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { runId: null, session: false, follow: null, approvals: new Map(), open: [] };

// -- the API ------------------------------------------------------------------------------------------------------

function headers(extra = {}) {
  const token = sessionStorage.getItem("stalwart-token");
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function api(path, options = {}) {
  const init = { ...options, headers: headers(options.body ? { "Content-Type": "application/json" } : {}) };
  const response = await fetch(path, init);
  if (response.status === 401) {
    await askToken();
    return api(path, options);
  }
  const body = response.headers.get("content-type")?.includes("json") ? await response.json() : {};
  if (!response.ok) throw new Error(body.error ? body.error.message : `${response.status} ${response.statusText}`);
  return body;
}

function askToken() {
  return new Promise((resolve) => {
    const dialog = $("token-dialog");
    $("token-form").onsubmit = () => {
      sessionStorage.setItem("stalwart-token", $("token").value.trim());
      resolve();
    };
    if (!dialog.open) dialog.showModal();
  });
}

function notice(text) {
  $("notice").textContent = text || "";
}

// -- runs and sessions --------------------------------------------------------------------------------------------

async function loadRuns() {
  let runs;
  try {
    ({ runs } = await api("/api/runs?limit=50"));
  } catch (err) {
    notice(err.message);
    return;
  }
  const list = $("run-list");
  list.replaceChildren();
  for (const run of runs) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.runId = run.run_id;
    button.setAttribute("aria-current", String(run.run_id === state.runId));
    button.append(`${run.agent || "run"} · ${run.status || run.temporal_status || ""}`);
    const id = document.createElement("span");
    id.className = "id";
    id.textContent = run.run_id;
    button.append(id);
    button.addEventListener("click", () => open(run.run_id));
    item.append(button);
    list.append(item);
  }
}

function open(runId) {
  if (location.hash !== `#${encodeURIComponent(runId)}`) location.hash = encodeURIComponent(runId);
  state.runId = runId;
  for (const button of document.querySelectorAll(".run-list button")) {
    button.setAttribute("aria-current", String(button.dataset.runId === runId));
  }
  $("log").replaceChildren();
  state.open = [];
  $("run-title").textContent = runId;
  setComposer(false);
  if (state.follow) state.follow.abort();
  state.follow = new AbortController();
  follow(runId, state.follow.signal);
}

// -- following a run: Server-Sent Events over fetch ----------------------------------------------------------------

async function follow(runId, signal) {
  let lastId = null;
  while (!signal.aborted) {
    try {
      const extra = lastId ? { "Last-Event-ID": lastId } : {};
      const response = await fetch(`/api/runs/${encodeURIComponent(runId)}/events`, { headers: headers(extra), signal });
      if (response.status === 401) {
        await askToken();
        continue;
      }
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        notice(body.error ? body.error.message : `cannot follow ${runId}: ${response.status}`);
        return;
      }
      notice("");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = parse(block);
          if (!event) continue;
          if (event.id) lastId = event.id;
          handle(event.kind, event.data);
          if (event.kind === "end") return;
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      notice(`connection lost; resuming… (${err.message})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000)); // then resume from the last offset seen
  }
}

function parse(block) {
  const event = { kind: "message", data: "", id: null };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event.kind = value;
    else if (field === "data") event.data += value;
    else if (field === "id") event.id = value;
  }
  if (!event.data) return null;
  event.data = JSON.parse(event.data);
  return event;
}

function handle(kind, data) {
  if (kind === "step") step(data.index, data.record);
  else if (kind === "delta") answer(data.index).append(data.text);
  else if (kind === "retract") retract(data.index, data.chars);
  else if (kind === "reset") reset();
  else if (kind === "state") showState(data);
  else if (kind === "approvals") {
    state.approvals.set(data.run_id, data.pending);
    renderInbox();
    for (const open of state.open) tool(open.record); // a call in flight may be the one now waiting for you
  } else if (kind === "end") ended(data);
}

// -- the conversation ------------------------------------------------------------------------------------------------

function item(key, className) {
  let li = document.querySelector(`#log > li[data-key="${CSS.escape(key)}"]`);
  if (!li) {
    li = document.createElement("li");
    li.dataset.key = key;
    li.className = className;
    $("log").append(li);
    li.scrollIntoView({ block: "end" });
  }
  return li;
}

function bubble(li, who) {
  let text = li.querySelector(".bubble");
  if (!text) {
    const label = document.createElement("div");
    label.className = "who";
    label.textContent = who;
    text = document.createElement("div");
    text.className = "bubble";
    li.append(label, text);
  }
  return text;
}

function answer(index) {
  const li = item(`answer-${index}`, "assistant live");
  return bubble(li, "Agent");
}

function retract(index, chars) {
  // `chars` counts Unicode code points, as the server's offsets do; a string's length counts UTF-16 code units
  // (two for an emoji), so the text is cut as an array of code points.
  const text = answer(index);
  const points = Array.from(text.textContent);
  text.textContent = points.slice(0, Math.max(0, points.length - chars)).join("");
}

function reset() {
  // The offset this page resumed from is no point of the run (the id now names a newer run): the run comes again
  // from its start, so what the page shows of it goes.
  $("log").replaceChildren();
  state.open = [];
}

function step(index, record) {
  if (record.role === "user") {
    bubble(item(`user-${index}`, "user"), "You").textContent = record.content;
  } else if (record.role === "assistant") {
    if (!record.final || record.error) {
      if (record.error) bubble(item(`answer-${index}`, "assistant"), "Agent").textContent = `(${record.error})`;
      const live = document.querySelector(`#log > li[data-key="answer-${index}"]`);
      if (live && !record.error) live.remove();
      return;
    }
    const li = item(`answer-${index}`, "assistant");
    li.classList.remove("live");
    const text = bubble(li, "Agent");
    if (text.textContent !== record.content) text.textContent = record.content;
  } else if (record.role === "tool") {
    tool(record);
  }
}

function tool(record) {
  const li = item(`tool-${record.tool_call_id}`, "tool");
  const waiting = [...(state.approvals.get(state.runId) || [])].some((a) => a.call_id === record.tool_call_id);
  const ended = record.ended_at !== null && record.ended_at !== undefined;
  li.classList.toggle("waiting", !ended && waiting);
  li.classList.toggle("failed", ended && !!record.error);
  li.classList.toggle("done", ended && !record.error);
  const label = ended ? (record.error ? "failed" : "done") : waiting ? "waiting for approval" : "running";
  li.replaceChildren();
  const head = document.createElement("div");
  const name = document.createElement("span");
  name.className = "name";
  name.textContent = `Tool call · ${record.tool_name}`;
  const status = document.createElement("span");
  status.className = "state";
  status.textContent = label;
  head.append(name, status);
  const args = document.createElement("pre");
  args.textContent = JSON.stringify(record.arguments || {}, null, 0);
  li.append(head, args);
  if (ended) {
    const result = document.createElement("pre");
    result.textContent = record.error ? record.error : record.result || "";
    li.append(result);
  }
}

function showState(data) {
  if (data.error) notice(data.error);
  if (data.status === undefined) return;
  $("run-title").textContent = `${data.agent} · ${data.run_id}`;
  const badge = $("run-status");
  badge.hidden = false;
  badge.textContent = data.status.replace("_", " ");
  badge.className = `badge ${data.status}`;
  const link = $("ui-link");
  link.href = data.ui_url;
  link.hidden = false;
  state.session = data.session;
  setComposer(data.session && !["closed", "idle", "error", "cancelled"].includes(data.status));
  const limits = data.limits || {};
  const of = (used, limit, show = String) => (limit ? `${show(used)} of ${show(limit)}` : show(used));
  $("budget-steps").textContent = of(data.steps_used ?? 0, limits.max_steps);
  $("budget-tokens").textContent = of(data.tokens_used ?? 0, limits.max_tokens, (n) => n.toLocaleString());
  $("budget-cost").textContent = of(data.cost_usd ?? 0, limits.max_cost_usd, (n) => `$${Number(n).toFixed(4)}`);
  state.open = data.open || [];
  for (const open of state.open) tool(open.record);
}

function ended(data) {
  setComposer(false);
  const li = item("end", "system");
  li.textContent = data.error ? `The run ended: ${data.error}` : `The ${state.session ? "session" : "run"} ended (${data.status}).`;
  loadRuns();
}

function setComposer(enabled) {
  $("message").disabled = !enabled;
  $("send").disabled = !enabled;
}

async function send(event) {
  event.preventDefault();
  const box = $("message");
  const message = box.value;
  if (!message.trim() || !state.runId) return;
  $("send").disabled = true;
  try {
    await api(`/api/sessions/${encodeURIComponent(state.runId)}/messages`, {
      method: "POST",
      body: JSON.stringify({ message }),
    });
    box.value = "";
    notice("");
  } catch (err) {
    notice(err.message);
  } finally {
    $("send").disabled = box.disabled;
    box.focus();
  }
}

// -- approvals -------------------------------------------------------------------------------------------------------

async function loadApprovals() {
  try {
    const { runs } = await api("/api/approvals");
    const seen = new Set(runs.map((r) => r.run_id));
    for (const run of runs) state.approvals.set(run.run_id, run.pending);
    for (const runId of [...state.approvals.keys()]) {
      if (!seen.has(runId) && runId !== state.runId) state.approvals.delete(runId);
    }
    renderInbox();
  } catch (err) {
    notice(err.message);
  }
}

function renderInbox() {
  const inbox = $("inbox");
  const focused = document.activeElement?.closest?.("#inbox li")?.dataset.callKey;
  const reasons = new Map([...inbox.querySelectorAll("li")].map((li) => [li.dataset.callKey, li.querySelector("input").value]));
  inbox.replaceChildren();
  let count = 0;
  for (const [runId, pending] of state.approvals) {
    for (const call of pending) {
      count += 1;
      const key = `${runId}/${call.call_id}`;
      const li = document.createElement("li");
      li.dataset.callKey = key;
      const name = document.createElement("div");
      name.className = "tool-name";
      name.textContent = call.tool_name;
      const run = document.createElement("span");
      run.className = "run";
      run.textContent = runId;
      const args = document.createElement("pre");
      args.textContent = JSON.stringify(call.arguments, null, 2);
      const reasonId = `reason-${count}`;
      const label = document.createElement("label");
      label.htmlFor = reasonId;
      label.textContent = "Reason (needed to reject)";
      const reason = document.createElement("input");
      reason.id = reasonId;
      reason.value = reasons.get(key) || "";
      const row = document.createElement("div");
      row.className = "row";
      const approve = document.createElement("button");
      approve.type = "button";
      approve.textContent = "Approve";
      approve.setAttribute("aria-label", `Approve ${call.tool_name} call ${call.call_id}`);
      approve.addEventListener("click", () => decide(runId, call, "approve", reason));
      const reject = document.createElement("button");
      reject.type = "button";
      reject.className = "reject";
      reject.textContent = "Reject";
      reject.setAttribute("aria-label", `Reject ${call.tool_name} call ${call.call_id}`);
      reject.addEventListener("click", () => decide(runId, call, "reject", reason));
      row.append(approve, reject);
      li.append(name, run, args, label, reason, row);
      inbox.append(li);
      if (key === focused) reason.focus();
    }
  }
  $("inbox-count").textContent = String(count);
  $("inbox-count").classList.toggle("some", count > 0);
  $("inbox-empty").hidden = count > 0;
}

async function decide(runId, call, decision, reason) {
  if (decision === "reject" && !reason.value.trim()) {
    notice("Say why you reject the call: the agent reads the reason.");
    reason.focus();
    return;
  }
  try {
    await api(`/api/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(call.call_id)}/${decision}`, {
      method: "POST",
      body: JSON.stringify({ reason: reason.value.trim() || null, reviewer: "web page" }),
    });
    const left = (state.approvals.get(runId) || []).filter((a) => a.call_id !== call.call_id);
    state.approvals.set(runId, left);
    renderInbox();
    notice("");
  } catch (err) {
    notice(err.message);
  }
}

// -- start ----------------------------------------------------------------------------------------------------------

async function startSession(event) {
  event.preventDefault();
  try {
    const { session_id } = await api("/api/sessions", {
      method: "POST",
      body: JSON.stringify({ agent: $("agent-path").value.trim() }),
    });
    await loadRuns();
    open(session_id);
    $("message").focus();
  } catch (err) {
    notice(err.message);
  }
}

async function main() {
  $("new-session").addEventListener("submit", startSession);
  $("composer").addEventListener("submit", send);
  $("refresh").addEventListener("click", loadRuns);
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  try {
    const info = await api("/api/info");
    $("where").textContent = `namespace ${info.namespace} · task queue ${info.task_queue}`;
  } catch (err) {
    notice(err.message);
  }
  await loadRuns();
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted) open(wanted);
  window.addEventListener("hashchange", () => {
    const id = decodeURIComponent(location.hash.slice(1));
    if (id && id !== state.runId) open(id);
  });
  loadApprovals();
  setInterval(loadApprovals, 3000);
  setInterval(() => {
    if (!document.activeElement?.closest?.(".run-list")) loadRuns(); // never redrawn under a person's focus
  }, 10000);
}

main();
