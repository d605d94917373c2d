// AgentMap run viewer: the server draws the page (the graphs, the selected one as the offline SVG, its form);
// this script adds the live parts: choosing another graph (drawn by GET /assistants/{id}/svg), runs over the same
// LangGraph protocol the SDK uses, nodes coloured from the run's `nodes` events, answers to paused nodes.
"use strict";

const $ = (id) => document.getElementById(id);
const SYSTEM_KEYS = new Set(["last_action_success", "graph_success", "errors"]);
const view = { assistant: null, thread: null, nodes: new Map(), rows: new Map() };

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const key = $("api-key").value.trim();
  if (key) h["X-Api-Key"] = key;
  const who = $("authorization").value.trim();  // the user, for a server with auth handlers (--auth)
  if (who) h["Authorization"] = who;
  return h;
}

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = headers(Object.assign({ "Content-Type": "application/json" }, opts.headers || {}));
  const res = await fetch(path, opts);
  if (!res.ok) {
    let message = res.status + " " + res.statusText;
    try { const body = await res.json(); message = body.message + (body.hint ? " (" + body.hint + ")" : ""); } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  const type = res.headers.get("content-type") || "";
  return type.includes("json") ? res.json() : res.text();
}

function setStatus(text, kind) {
  $("status").textContent = text;
  $("status").className = kind || "";
  document.body.dataset.runStatus = kind || "idle";
}

// The drawing fills each node's box with an attribute; the run's colours are set inline, over it.
const COLOURS = {
  running: ["#fff3c4", "#c99a00"],
  succeeded: ["#c8f0c9", "#1b6e20"],
  failed: ["#f9c9c5", "#b3261e"],
  paused: ["#e2dbff", "#5b3cc4"],
};

function paint(g, status) {
  g.classList.remove("am-running", "am-succeeded", "am-failed", "am-paused");
  for (const shape of g.querySelectorAll(":scope > rect, :scope > path, :scope > polygon, :scope > circle")) {
    if (shape.dataset.fill === undefined) shape.dataset.fill = shape.style.getPropertyValue("fill");
    const colours = COLOURS[status];
    shape.style.setProperty("fill", colours ? colours[0] : shape.dataset.fill, "important");
    if (colours) shape.style.setProperty("stroke", colours[1], "important");
    else shape.style.removeProperty("stroke");
  }
  if (status) g.classList.add("am-" + status);
}

function findNode(svg, name) {
  for (const g of svg.querySelectorAll("g.node")) if (g.dataset.node === name) return g;
  return null;
}

async function loadGraphs() {
  try {
    const assistants = await api("/assistants/search", { method: "POST", body: JSON.stringify({ limit: 1000 }) });
    const list = $("graph-list");
    list.replaceChildren();
    for (const a of assistants) {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = a.graph_id;
      b.dataset.graph = a.graph_id;
      b.addEventListener("click", () => select(a));
      li.append(b);
      list.append(li);
    }
    setStatus(assistants.length + " workflow" + (assistants.length === 1 ? "" : "s"), "");
    const wanted = new URLSearchParams(location.search).get("graph");
    const first = assistants.find((a) => a.graph_id === wanted) || assistants[0];
    if (first) await select(first);
  } catch (err) {
    setStatus(err.message, "error");
  }
}

async function select(assistant) {
  view.assistant = assistant;
  view.thread = null;
  for (const b of document.querySelectorAll("nav button")) b.setAttribute("aria-current", String(b.dataset.graph === assistant.graph_id));
  $("graph-title").textContent = assistant.graph_id;
  $("graph-description").textContent = assistant.description || "";
  view.nodes = new Map();
  if ($("diagram").dataset.graph === assistant.graph_id && $("diagram").querySelector("svg")) {
    resetRun(); // the server drew this graph and its form: keep them (and what was typed)
    return;
  }
  $("diagram").innerHTML = await api("/assistants/" + encodeURIComponent(assistant.assistant_id) + "/svg");
  $("diagram").dataset.graph = assistant.graph_id;
  const keys = (assistant.metadata.input_keys || []).length
    ? assistant.metadata.input_keys
    : (assistant.metadata.state_keys || []).filter((k) => !SYSTEM_KEYS.has(k));
  const fields = $("fields");
  fields.replaceChildren();
  for (const key of keys) {
    const label = document.createElement("label");
    const span = document.createElement("span");
    span.textContent = key;
    const input = document.createElement("input");
    input.name = key;
    label.append(span, input);
    fields.append(label);
  }
  resetRun();
}

function resetRun() {
  $("summary").tBodies[0].replaceChildren();
  view.rows = new Map();
  $("final").textContent = "";
  $("question").hidden = true;
  for (const g of $("diagram").querySelectorAll("g.node")) paint(g, null);
}

function parseValue(text) {
  try { return JSON.parse(text); } catch (e) { return text; }
}

function markNode(event) {
  const svg = $("diagram").querySelector("svg");
  const g = svg && findNode(svg, event.node);
  if (g) paint(g, event.status);
  let row = view.rows.get(event.node);
  if (!row || (event.status === "running" && row.dataset.status !== "running")) {
    row = $("summary").tBodies[0].insertRow();
    for (let i = 0; i < 4; i++) row.insertCell();
    row.cells[0].textContent = event.node;
    view.rows.set(event.node, row);
  }
  row.dataset.status = event.status;
  row.cells[1].textContent = event.status;
  row.cells[1].className = event.status;
  row.cells[2].textContent = event.duration == null ? "" : (event.duration * 1000).toFixed(2) + " ms";
  row.cells[3].textContent = event.error || "";
}

function showValues(values) {
  const shown = Object.assign({}, values);
  const interrupts = shown.__interrupt__;
  delete shown.__interrupt__;
  $("final").textContent = JSON.stringify(shown, null, 2);
  if (interrupts && interrupts.length) {
    const value = interrupts[0].value;
    $("question-node").textContent = (value && value.node) || "";
    $("question-text").textContent = value && typeof value === "object" && "question" in value ? value.question : JSON.stringify(value);
    $("question").hidden = false;
    $("answer").focus();
  }
}

async function stream(path, body) {
  const res = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const err = await res.json().catch(() => ({ message: res.statusText }));
    throw new Error(err.message + (err.hint ? " (" + err.hint + ")" : ""));
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let outcome = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      const payload = data.length ? JSON.parse(data.join("\n")) : null;
      if (event === "nodes") markNode(payload);
      else if (event === "values") showValues(payload);
      else if (event === "nodes/summary") outcome = payload;
      else if (event === "error") throw new Error(payload.message);
    }
  }
  return outcome;
}

async function go(body, fresh) {
  if (fresh) resetRun();
  $("question").hidden = true;
  setStatus("running", "running");
  try {
    const path = "/threads/" + encodeURIComponent(view.thread) + "/runs/stream";
    const outcome = await stream(path, Object.assign({ assistant_id: view.assistant.assistant_id, stream_mode: ["values", "nodes"] }, body));
    if (!outcome) setStatus("stopped", "error");
    else if (outcome.paused) setStatus("paused: waiting for an answer", "paused");
    else setStatus(outcome.success ? "succeeded" : "failed", outcome.success ? "succeeded" : "failed");
  } catch (err) {
    setStatus(err.message, "error");
    if (!fresh) $("question").hidden = false; // a refused answer leaves the run paused: ask again
  }
}

$("state-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (!view.assistant) return;
  const input = {};
  for (const el of $("fields").querySelectorAll("input")) if (el.value !== "") input[el.name] = parseValue(el.value);
  try {
    view.thread = (await api("/threads", { method: "POST", body: JSON.stringify({ metadata: { graph_id: view.assistant.graph_id } }) })).thread_id;
  } catch (err) {
    setStatus(err.message, "error");
    return;
  }
  await go({ input }, true);
});

$("question").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  await go({ command: { resume: parseValue($("answer").value) } }, false);
});

$("api-key").value = sessionStorage.getItem("agentmap-api-key") || "";
$("authorization").value = sessionStorage.getItem("agentmap-authorization") || "";
let loadedWith = null;
function reload() {
  const key = $("api-key").value + "\n" + $("authorization").value;
  if (key === loadedWith) return; // a change event without a new key must not wipe the form
  loadedWith = key;
  sessionStorage.setItem("agentmap-api-key", $("api-key").value);
  sessionStorage.setItem("agentmap-authorization", $("authorization").value);
  loadGraphs();
}
$("api-key").addEventListener("change", reload);
$("authorization").addEventListener("change", reload);
reload();
