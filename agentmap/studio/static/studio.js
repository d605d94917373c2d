// AgentMap studio: the workflow file as an ARIA grid, checked by the server's validator on every change.
"use strict";

const $ = (id) => document.getElementById(id);
const LONG = new Set(["Prompt", "Description", "Context"]);
const NEXT = new Set(["Edge", "Success_Next", "Failure_Next"]);
// a thread's status in the words of `agentmap threads` (the LangGraph protocol says idle, busy, interrupted, error)
const STATUS = { idle: "done", busy: "running", interrupted: "paused", error: "failed" };
const S = {
  file: null, sheet: null, sheets: [], version: null, rows: [], header: null, columns: [], known: [], lines: [], findings: [],
  valid: false,
  tab: null, sel: null, editing: null, checking: false, pending: false, checks: 0, trs: new Map(),
  marked: [], drawn: "", drawTimer: null, dismissed: null, saving: false,
};

function say(text, state) {
  $("status").textContent = text;
  if (state) document.body.dataset.state = state;
}

// The studio's per-launch token, from the address `agentmap studio` printed (?token=...): kept for this origin
// (a reload, another tab), then taken out of the address bar so it is not bookmarked or shown.
const TOKEN = (() => {
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (given) {
    localStorage.setItem("agentmap-studio-token", given);
    params.delete("token");
    const query = params.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  }
  return given || localStorage.getItem("agentmap-studio-token") || "";
})();

// every request to the studio carries the token, and the API key when one is entered
function credentials(headers) {
  headers["X-AgentMap-Token"] = TOKEN;
  const key = $("api-key").value.trim();
  if (key) headers["X-Api-Key"] = key;
  const who = $("authorization").value.trim();  // the user runs go through (agentmap studio --auth)
  if (who) headers["Authorization"] = who;
  return headers;
}

async function api(method, path, body) {
  const init = { method, headers: credentials({}) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("/studio/api/" + path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const err = new Error(data.message || response.statusText);
    err.status = response.status;
    err.data = data;
    throw err;
  }
  return data;
}

const col = (name) => S.columns.indexOf(name);
const isComment = (row) => row.cells.length > 0 && row.cells[0].trim().startsWith("#");
const body = () => S.rows.filter((r) => r !== S.header);
// a workbook sheet without a GraphName column is one graph, named after the sheet (as the command line reads it)
const graphOf = (row) => (col("GraphName") >= 0 ? (row.cells[col("GraphName")] || "").trim() : S.sheet || "");
const blank = (row) => !row.cells.some((c) => c.trim());
// comment and blank rows show on every tab: they belong to the file, not to a graph
const visible = (row) => row !== S.header && (S.tab === null || isComment(row) || blank(row) || graphOf(row) === S.tab);
const sheet = () => ({ file: S.file, rows: S.rows.map((r) => ({ id: r.id, cells: r.cells })) });

function graphs() {
  const names = [];
  for (const row of body()) {
    const name = graphOf(row);
    if (name && !isComment(row) && !names.includes(name)) names.push(name);
  }
  return names;
}

// ---- loading --------------------------------------------------------------------------------------------

async function start() {
  try {
    const listing = await api("GET", "files");
    const select = $("file-select");
    select.replaceChildren(...listing.files.map((f) => new Option(f, f)));
    const params = new URLSearchParams(location.search);
    const wanted = params.get("file");
    S.tab = params.get("graph");  // the graph to show first (agentmap studio flow.csv::Main); kept if the file has it
    // a workbook named without its sheet (?file=flows.xlsx) opens its first sheet
    const found = wanted && listing.files.find((f) => f === wanted || f.startsWith(wanted + "["));
    if (found) select.value = found;
    await openFile(select.value);
  } catch (err) {
    const refused = err.data && err.data.code === "token-required"
      ? "This page needs the studio's token: open the address agentmap studio printed (it ends with token=…)."
      : "This studio needs its API key: enter it above.";
    say(err.status === 401 ? refused : err.message, "error");
  }
}

async function openFile(file) {
  say("Opening " + file + "…", "loading");
  const data = await api("GET", "open?file=" + encodeURIComponent(file));
  S.file = file;
  S.dismissed = null;
  load(data);
  say("Opened " + file, "ready");
}

function load(data) {
  S.version = data.version;
  S.rows = data.rows.map((r) => ({ id: r.id, cells: r.cells.slice(), formulas: r.formulas || {} }));
  S.columns = data.columns;
  S.known = data.known_columns || [];
  S.sheet = data.sheet || null;
  S.sheets = data.sheets || [];
  S.header = S.rows.find((r) => !isComment(r) && r.cells.some((c) => c.trim())) || null;
  $("agent-types").replaceChildren(...data.agent_types.map((t) => new Option(t)));
  if (S.tab !== null && !graphs().includes(S.tab)) S.tab = null;
  if (S.tab === null && graphs().length === 1) S.tab = graphs()[0];
  S.sel = null;
  S.drawn = "";
  S.dirty = false;
  hideChanged();
  renderTabs();
  renderGrid();
  renderColumnChoice();
  checked(data);
  prepareRun();
}

// ---- the grid -------------------------------------------------------------------------------------------

// a workbook's sheets: one tab each, opening that sheet (its own rows, findings and graph)
function openSheet(name) {
  if (name === S.file) return;
  if (S.dirty && !confirm("This sheet has unsaved changes. Open the other sheet anyway?")) return;
  $("file-select").value = name;
  openFile(name).catch((err) => say(err.message, "error"));
}

function renderSheetTabs() {
  const list = $("sheet-tabs");
  list.hidden = S.sheets.length === 0;
  list.replaceChildren(...S.sheets.map((name) => {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.setAttribute("role", "tab");
    tab.textContent = name.slice(name.lastIndexOf("[") + 1, -1);
    tab.setAttribute("aria-selected", String(name === S.file));
    tab.tabIndex = name === S.file ? 0 : -1;
    tab.addEventListener("click", () => openSheet(name));
    tab.addEventListener("keydown", (e) => {
      const all = [...list.children];
      const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (step) { const next = all[(all.indexOf(tab) + step + all.length) % all.length]; next.focus(); next.click(); }
    });
    return tab;
  }));
}

function renderTabs() {
  renderSheetTabs();
  const names = graphs();
  const tabs = names.length > 1 ? [[null, "All rows"], ...names.map((n) => [n, n])] : names.map((n) => [n, n]);
  $("tabs").replaceChildren(...tabs.map(([value, label]) => {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.setAttribute("role", "tab");
    tab.textContent = label;
    tab.setAttribute("aria-selected", String(S.tab === value));
    tab.tabIndex = S.tab === value ? 0 : -1;
    tab.addEventListener("click", () => {
      S.tab = value;
      renderTabs();
      renderGrid();
      applyFindings();
      draw();
      prepareRun();
    });
    tab.addEventListener("keydown", (e) => {
      const all = [...$("tabs").children];
      const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (step) { const next = all[(all.indexOf(tab) + step + all.length) % all.length]; next.focus(); next.click(); }
    });
    return tab;
  }));
}

function cellElement(line, index, text) {
  const td = document.createElement("td");
  td.setAttribute("role", "gridcell");
  td.setAttribute("aria-colindex", String(index + 1));
  td.tabIndex = -1;
  td.textContent = text;
  return td;
}

function renderGrid() {
  const width = Math.max(S.header ? S.header.cells.length : 0, ...S.rows.map((r) => r.cells.length));
  const head = document.createElement("tr");
  head.setAttribute("role", "row");
  const corner = document.createElement("th");
  corner.className = "rowhead";
  corner.setAttribute("aria-hidden", "true");
  head.append(corner);
  for (let c = 0; c < width; c++) {
    const th = document.createElement("th");
    th.setAttribute("role", "columnheader");
    th.setAttribute("aria-colindex", String(c + 1));
    th.textContent = S.header ? S.header.cells[c] || "" : "";
    head.append(th);
  }
  S.trs = new Map();
  if (S.header) S.trs.set(S.header, head);
  const rows = [];
  for (const row of S.rows) {
    if (!visible(row)) continue;
    const tr = document.createElement("tr");
    tr.setAttribute("role", "row");
    if (isComment(row)) tr.className = "comment";
    const number = document.createElement("td");
    number.className = "rowhead";
    number.setAttribute("aria-hidden", "true");
    tr.append(number);
    for (let c = 0; c < width; c++) {
      const cell = cellElement(0, c, row.cells[c] || "");
      const formula = row.formulas && row.formulas[c];
      if (formula) {  // the value Excel computed is shown (and read by runs); the formula is edited in Excel
        cell.setAttribute("aria-readonly", "true");
        cell.setAttribute("aria-description", "formula " + formula);
        cell.classList.add("formula");
      }
      tr.append(cell);
    }
    S.trs.set(row, tr);
    rows.push(tr);
  }
  $("grid").tHead.replaceChildren(head);
  $("grid").tBodies[0].replaceChildren(...rows);
  $("grid").setAttribute("aria-colcount", String(width));
  applyLines();
  const keep = S.sel && visible(S.sel.row) ? S.sel : null;
  const first = S.rows.find(visible);
  if (keep) select(keep.row, keep.col, false);
  else if (first) select(first, Math.max(col("Node"), 0), false);
}

function applyLines() {
  S.rows.forEach((row, i) => {
    const tr = S.trs.get(row);
    const line = S.lines[i];
    if (!tr || line === undefined || tr.getAttribute("aria-rowindex") === String(line)) return;
    tr.setAttribute("aria-rowindex", String(line));
    for (const cell of tr.children) {
      if (cell.classList.contains("rowhead")) cell.textContent = tr.parentElement?.tagName === "THEAD" ? "" : line;
      else cell.setAttribute("aria-rowindex", String(line));
    }
  });
  const last = S.lines.length ? S.lines[S.lines.length - 1] : 0;
  $("grid").setAttribute("aria-rowcount", String(last));
}

function td(row, c) {
  const tr = S.trs.get(row);
  return tr && row !== S.header ? tr.children[c + 1] || null : null;
}

function select(row, c, focus = true) {
  if (S.sel) {
    const old = td(S.sel.row, S.sel.col);
    if (old) { old.setAttribute("aria-selected", "false"); old.tabIndex = -1; }
    S.trs.get(S.sel.row)?.classList.remove("selected");
  }
  S.sel = { row, col: c };
  const cell = td(row, c);
  if (!cell) return;
  cell.setAttribute("aria-selected", "true");
  cell.tabIndex = 0;
  S.trs.get(row).classList.add("selected");
  if (focus) { cell.focus(); cell.scrollIntoView({ block: "nearest", inline: "nearest" }); }
  markPictureNode();
}

function move(dRow, dCol) {
  if (!S.sel) return;
  const shown = S.rows.filter(visible);
  const width = S.trs.get(S.sel.row).children.length - 1;
  const r = Math.min(Math.max(shown.indexOf(S.sel.row) + dRow, 0), shown.length - 1);
  const c = Math.min(Math.max(S.sel.col + dCol, 0), width - 1);
  select(shown[r], c);
}

function setValue(row, c, value) {
  while (row.cells.length <= c) row.cells.push("");
  row.cells[c] = value;
}

// ---- editing --------------------------------------------------------------------------------------------

function startEdit(initial) {
  if (!S.sel || S.editing) return;
  const { row, col: c } = S.sel;
  const cell = td(row, c);
  const name = S.columns[c] || "";
  if (row.formulas && row.formulas[c]) {
    say(`This cell shows the value of its formula ${row.formulas[c]}: edit the formula in Excel.`, "error");
    return;
  }
  const original = row.cells[c] || "";
  const editor = document.createElement(LONG.has(name) ? "textarea" : "input");
  editor.setAttribute("aria-label", `${S.header.cells[c] || "cell"}, row ${cell.getAttribute("aria-rowindex")}`);
  editor.setAttribute("aria-describedby", "editor-help");
  if (name === "AgentType") editor.setAttribute("list", "agent-types");
  if (NEXT.has(name)) {
    editor.setAttribute("list", "node-names");
    const names = body().filter((r) => graphOf(r) === graphOf(row) && !isComment(r)).map((r) => r.cells[col("Node")] || "");
    $("node-names").replaceChildren(...names.filter(Boolean).map((n) => new Option(n)));
  }
  if (name === "Context") {
    editor.spellcheck = false;
    editor.setAttribute("aria-describedby", "context-help context-check editor-help");
    showContextKeys(row);
    checkContext(row, original);
    editor.addEventListener("input", () => checkContext(row, editor.value));
  }
  editor.value = initial === undefined ? original : initial;
  S.editing = { row, col: c, original, editor };
  cell.classList.add("editing");
  cell.replaceChildren(editor);
  editor.focus();
  if (initial !== undefined) editor.setSelectionRange(editor.value.length, editor.value.length);
  if (initial !== undefined) { setValue(row, c, editor.value); scheduleCheck(); }
  editor.addEventListener("input", () => { setValue(row, c, editor.value); scheduleCheck(); });
  editor.addEventListener("blur", () => { if (S.editing && S.editing.editor === editor) finishEdit(true); });
  editor.addEventListener("keydown", (e) => {
    e.stopPropagation();
    if (e.key === "Escape") { e.preventDefault(); finishEdit(false); }
    else if (e.key === "Enter" && !e.shiftKey && !e.altKey) { e.preventDefault(); finishEdit(true); }
    else if (e.key === "Tab") { e.preventDefault(); finishEdit(true); move(0, e.shiftKey ? -1 : 1); }
  });
}

function finishEdit(keep) {
  const edit = S.editing;
  if (!edit) return;
  $("context-help").hidden = true;
  $("context-check").hidden = true;
  S.editing = null;
  if (!keep) setValue(edit.row, edit.col, edit.original);
  const cell = td(edit.row, edit.col);
  cell.classList.remove("editing");
  cell.textContent = edit.row.cells[edit.col] || "";
  select(edit.row, edit.col);
  if (!keep || edit.row.cells[edit.col] !== edit.original) scheduleCheck();
  if (S.columns[edit.col] === "GraphName" && edit.row.cells[edit.col] !== edit.original) renderTabs();
}

function gridKeys(e) {
  if (S.editing || !S.sel) return;
  const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  if (e.altKey && (e.key === "ArrowUp" || e.key === "ArrowDown")) { e.preventDefault(); moveRow(e.key === "ArrowUp" ? -1 : 1); }
  else if (e.altKey && e.key === "Insert") { e.preventDefault(); addRow(); }
  else if (e.altKey && e.key === "Delete") { e.preventDefault(); removeRow(); }
  else if (moves[e.key]) { e.preventDefault(); move(...moves[e.key]); }
  else if (e.key === "Home") { e.preventDefault(); select(S.sel.row, 0); }
  else if (e.key === "End") { e.preventDefault(); select(S.sel.row, S.trs.get(S.sel.row).children.length - 2); }
  else if (e.key === "Enter" || e.key === "F2") { e.preventDefault(); startEdit(); }
  else if (e.key === "Delete" || e.key === "Backspace") {
    e.preventDefault();
    if (S.sel.row.formulas && S.sel.row.formulas[S.sel.col]) { startEdit(); return; }  // says why not
    setValue(S.sel.row, S.sel.col, "");
    td(S.sel.row, S.sel.col).textContent = "";
    scheduleCheck();
  } else if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); startEdit(e.key); }
}

// the Context keys of the row's agent type, from the published JSON Schema (csv_specs/schema/context.schema.json)
let contextSchema = null;
async function schemaOf(row) {
  if (!contextSchema) {
    contextSchema = await fetch("/studio/static/context.schema.json").then((r) => r.json()).catch(() => ({ $defs: {} }));
  }
  const written = col("AgentType") >= 0 ? (row.cells[col("AgentType")] || "").trim() : "";
  const key = written.toLowerCase().replace(/-/g, "_");
  const type = (key.length > 5 ? key.replace(/_?agent$/, "") : key) || "default";
  return [type, resolved(contextSchema.$defs[type])];
}

// an entry with the keys it shares with other types ("allOf" of "$ref"s) and another type's name ("$ref") resolved
function resolved(schema) {
  if (!schema) return schema;
  const byRef = (s) => (s.$ref ? resolved(contextSchema.$defs[s.$ref.split("/").pop()]) : resolved(s));
  if (schema.$ref) return byRef(schema);
  const parts = [...(schema.allOf || []).map(byRef), schema];
  const own = schema.properties || {};
  return {
    ...schema,
    properties: Object.assign({}, own, ...parts.map((p) => p.properties || {})),  // its own keys first
    required: parts.flatMap((p) => p.required || []),
  };
}

async function showContextKeys(row) {
  const help = $("context-help");
  const [type, schema] = await schemaOf(row);
  if (!schema) { help.hidden = true; return; }
  const keys = Object.entries(schema.properties || {});
  help.textContent = keys.length
    ? `Context keys of ${type}: ` + keys.map(([k, p]) => `${k}${p.type ? " (" + [].concat(p.type).join(" | ") + ")" : p.enum ? " (" + p.enum.join(" | ") + ")" : ""}: ${p.description || ""}`).join("; ")
    : `${type} takes no Context keys.`;
  help.hidden = false;
}

const FITS = {
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  null: (v) => v === null,
};

// what the schema says of a Context being typed: a required key missing, a value of the wrong type or not one of
// its values, a key the type does not list (passed to the agent as it is); the validator's findings still decide
function contextProblems(schema, text) {
  let value;
  try { value = JSON.parse(text); } catch (err) { return []; }  // not JSON (a Python dict): the findings judge it
  if (!FITS.object(value)) return [];
  const props = schema.properties || {};
  const problems = (schema.required || []).filter((k) => !(k in value)).map((k) => `${k} is required`);
  for (const [key, v] of Object.entries(value)) {
    const p = props[key];
    const types = p && p.type !== undefined ? [].concat(p.type) : [];
    if (!p) problems.push(`${key} is not a Context key of this type (it is passed to the agent as it is)`);
    else if (types.length && !types.some((t) => (FITS[t] || (() => true))(v))) problems.push(`${key} must be ${types.join(" or ")}`);
    else if (p.enum && !p.enum.includes(v)) problems.push(`${key} must be one of ${p.enum.join(" | ")}`);
    else if (typeof p.minimum === "number" && typeof v === "number" && v < p.minimum) problems.push(`${key} must be at least ${p.minimum}`);
    else if (typeof p.exclusiveMinimum === "number" && typeof v === "number" && v <= p.exclusiveMinimum) problems.push(`${key} must be more than ${p.exclusiveMinimum}`);
    else if (typeof p.maximum === "number" && typeof v === "number" && v > p.maximum) problems.push(`${key} must be at most ${p.maximum}`);
  }
  return problems;
}

async function checkContext(row, text) {
  const [type, schema] = await schemaOf(row);
  const problems = schema && text.trim() ? contextProblems(schema, text) : [];
  $("context-check").textContent = problems.length ? `Context of ${type}: ` + problems.join("; ") : "";
  $("context-check").hidden = !problems.length;
}

// ---- rows -----------------------------------------------------------------------------------------------

function addRow() {
  const width = S.header ? S.header.cells.length : 1;
  const row = { id: null, cells: Array(width).fill("") };
  const graph = S.tab ?? (S.sel ? graphOf(S.sel.row) : graphs()[0] || "");
  if (col("GraphName") >= 0) row.cells[col("GraphName")] = graph;
  const at = S.sel ? S.rows.indexOf(S.sel.row) + 1 : S.rows.length;
  S.rows.splice(at, 0, row);
  S.lines.splice(at, 0, (S.lines[at - 1] || 0) + 1);
  renderGrid();
  select(row, Math.max(col("Node"), 0));
  say("Added a row", "edited");
  scheduleCheck();
}

function removeRow() {
  if (!S.sel) return;
  const shown = S.rows.filter(visible);
  const next = shown[shown.indexOf(S.sel.row) + 1] || shown[shown.indexOf(S.sel.row) - 1] || null;
  const at = S.rows.indexOf(S.sel.row);
  S.rows.splice(at, 1);
  S.lines.splice(at, 1);
  S.sel = next ? { row: next, col: S.sel.col } : null;
  renderGrid();
  if (S.sel) select(S.sel.row, S.sel.col);
  say("Removed a row", "edited");
  scheduleCheck();
}

function moveRow(step) {
  if (!S.sel) return;
  const shown = S.rows.filter(visible);
  const other = shown[shown.indexOf(S.sel.row) + step];
  if (!other) return;
  const a = S.rows.indexOf(S.sel.row);
  const b = S.rows.indexOf(other);
  [S.rows[a], S.rows[b]] = [S.rows[b], S.rows[a]];
  renderGrid();
  select(S.sel.row, S.sel.col);
  say("Moved a row", "edited");
  scheduleCheck();
}

// ---- columns --------------------------------------------------------------------------------------------

// the columns the file does not have yet, to add at the end of the header (a finding may ask for one: "add a
// Context column to the file")
function renderColumnChoice() {
  const missing = S.known.filter((name) => !S.columns.includes(name));
  $("add-column").replaceChildren(new Option("choose…", ""), ...missing.map((name) => new Option(name, name)));
  $("add-column").disabled = !S.header || !missing.length;
}

function addColumn(name) {
  if (!S.header || !name || S.columns.includes(name)) return;
  const at = S.header.cells.length;
  for (const row of S.rows) {
    if (isComment(row) || (row !== S.header && blank(row))) continue;  // a comment's or blank line's cells are its own
    while (row.cells.length < at) row.cells.push("");
    row.cells.splice(at, 0, row === S.header ? name : "");
  }
  while (S.columns.length < at) S.columns.push("");
  S.columns.splice(at, 0, name);
  renderGrid();
  renderColumnChoice();
  const first = S.sel && visible(S.sel.row) ? S.sel.row : S.rows.find(visible);
  if (first) select(first, at);
  say("Added the column " + name, "edited");
  scheduleCheck();
}

// ---- findings -------------------------------------------------------------------------------------------

function scheduleCheck() {
  if (!S.dirty) { S.dirty = true; prepareRun(); }
  if (S.checking) { S.pending = true; return; }
  runCheck();
}

async function runCheck() {
  S.checking = true;
  const started = performance.now();
  try {
    checked(await api("POST", "check", sheet()));
    S.lastCheck = performance.now() - started;
  } catch (err) {
    say(err.message, "error");
  } finally {
    S.checking = false;
    if (S.pending) { S.pending = false; runCheck(); }
  }
}

function checked(data) {
  S.lines = data.lines;
  S.findings = data.findings;
  S.valid = data.valid;
  applyLines();
  applyFindings();
  S.checks += 1;
  document.body.dataset.checks = String(S.checks);
  document.dispatchEvent(new CustomEvent("studio:checked", { detail: { checks: S.checks, valid: S.valid } }));
  if (S.valid) draw();
  $("picture-title").textContent = S.valid || !S.drawn ? "Picture" : "Picture (as last valid)";
}

function applyFindings() {
  for (const cell of S.marked) {
    cell.removeAttribute("aria-invalid");
    cell.removeAttribute("aria-describedby");
    cell.classList.remove("error", "warning");
    cell.removeAttribute("title");
  }
  S.marked = [];
  const at = new Map(S.lines.map((line, i) => [line, S.rows[i]]));
  const items = S.findings.map((f, k) => {
    const li = document.createElement("li");
    li.id = "finding-" + k;
    li.className = f.severity;
    const button = document.createElement("button");
    button.type = "button";
    // in a workbook the place is named as the spreadsheet names it: flows.xlsx[Sheet]!F7; a finding on
    // another sheet (a graph renamed here that a node there calls) names that sheet, and opens it on click
    const elsewhere = Boolean(S.sheet && f.sheet && f.sheet !== S.sheet);
    const sheetName = elsewhere ? `${S.file.slice(0, S.file.lastIndexOf("["))}[${f.sheet}]` : S.file;
    const row_ = S.sheet && f.row ? `${sheetName}!${f.cell || f.row + ":" + f.row}` : `Row ${f.row}`;
    const place = f.row ? `${row_}${f.column_name ? ", " + f.column_name : ""}: ` : "";
    button.textContent = `${place}${f.severity} ${f.code}: ${f.message}`;
    const fix = document.createElement("div");
    fix.className = "fix";
    fix.textContent = f.fix ? "Fix: " + f.fix : "";
    const link = document.createElement("a");
    link.href = "/studio/docs/" + f.docs.replace("csv_specs/", "");
    link.target = "_blank";
    link.textContent = f.docs;
    li.append(button, fix, link);
    const row = f.row && !elsewhere ? at.get(f.row) : undefined;
    const c = f.column ? f.column - 1 : Math.max(col("Node"), 0);
    if (row) button.addEventListener("click", () => reveal(row, c));
    if (elsewhere) button.addEventListener("click", () => openSheet(sheetName));
    const cell = row ? td(row, c) : null;
    if (cell) {
      if (f.severity === "error") cell.setAttribute("aria-invalid", "true");
      else cell.classList.add("warning");
      const ids = (cell.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
      cell.setAttribute("aria-describedby", [...ids, li.id].join(" "));
      cell.title = [cell.title, f.message].filter(Boolean).join("\n");
      S.marked.push(cell);
    }
    return li;
  });
  $("findings").replaceChildren(...items);
  const errors = S.findings.filter((f) => f.severity === "error").length;
  const warnings = S.findings.length - errors;
  $("findings-summary").textContent = S.findings.length
    ? `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`
    : "No findings: the workflow is valid.";
}

function reveal(row, c) {
  if (!visible(row)) { S.tab = graphs().length > 1 ? null : S.tab; renderTabs(); renderGrid(); applyFindings(); }
  select(row, c);
}

// ---- the picture ----------------------------------------------------------------------------------------

function draw() {
  clearTimeout(S.drawTimer);
  S.drawTimer = setTimeout(async () => {
    const graph = S.tab ?? graphs()[0];
    if (!graph || !S.valid) return;
    const request = { ...sheet(), graph };
    // the picture shows names, agent types and edges: other cells (prompts, fields) do not redraw it
    const shown = ["GraphName", "Node", "AgentType", "Edge", "Success_Next", "Failure_Next"].map(col);
    const key = JSON.stringify([graph, S.rows.map((r) => shown.map((c) => (c >= 0 ? r.cells[c] || "" : "")))]);
    if (key === S.drawn) return;
    try {
      const data = await api("POST", "draw", request);
      S.drawn = key;
      $("picture").innerHTML = data.svg;
      $("picture").setAttribute("aria-label", `The graph ${graph} drawn`);
      for (const g of $("picture").querySelectorAll("g.node[data-node]")) {
        g.addEventListener("click", () => {
          const row = body().find((r) => graphOf(r) === graph && (r.cells[col("Node")] || "").trim() === g.dataset.node);
          if (row) reveal(row, Math.max(col("Node"), 0));
        });
      }
      markPictureNode();
      for (const [node, seen] of R.nodes) if (seen.status) paintNode(node, seen.status);  // a run drawn before
      paintPath();
      document.body.dataset.drawn = String(S.checks);
    } catch (err) {
      say("Cannot draw: " + err.message);
    }
  }, S.drawn ? 400 : 0);  // drawn when typing pauses: compiling a big graph takes longer than checking it
}

function markPictureNode() {
  const name = S.sel ? (S.sel.row.cells[col("Node")] || "").trim() : "";
  for (const g of $("picture").querySelectorAll("g.node[data-node]")) {
    g.classList.toggle("am-selected", g.dataset.node === name);
  }
}

// ---- saving and changes on disk -------------------------------------------------------------------------

// before a save, the threads waiting on the file (in the studio's checkpoint) and what the sheet on screen would
// do to them are shown, and the save waits for a click: they keep the revision they started on either way
async function save(force = false, confirmed = force) {
  if (S.editing) finishEdit(true);
  S.saving = true;
  say("Saving…", "saving");
  try {
    if (!confirmed) {
      const found = await api("POST", "impact", sheet());
      if (found.waiting) {
        showImpact(found);
        say(`Not saved yet: ${plural(found.waiting, "thread")} ${found.waiting === 1 ? "waits" : "wait"} on this file`, "impact");
        return;
      }
    }
    hideImpact();
    const data = await api("POST", "save", { ...sheet(), base: S.version, force });
    const keep = S.sel ? { pos: S.rows.indexOf(S.sel.row), col: S.sel.col } : null;
    load(data);
    if (keep && S.rows[keep.pos] && visible(S.rows[keep.pos])) select(S.rows[keep.pos], keep.col);
    say("Saved " + S.file, "saved");
  } catch (err) {
    if (err.status === 409) {
      showChanged(`${S.file} changed on disk since you opened it. Saving now would overwrite that change.`, true);
      say("Not saved: the file changed on disk", "conflict");
    } else {
      say("Not saved: " + err.message, "error");
    }
  } finally {
    S.saving = false;
  }
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function showImpact(found) {
  const v = found.verdicts;
  const judged = [v.safe && `${v.safe} safe`, v["needs-migration"] && `${v["needs-migration"]} would need a migration map`,
    v.unsafe && `${v.unsafe} unsafe`].filter(Boolean);
  $("impact-text").textContent = `${plural(found.waiting, "thread")} of ${S.file} ${found.waiting === 1 ? "waits" : "wait"} on `
    + "the revision they started on. Saving keeps them there (they finish on it); new runs take this sheet. "
    + (judged.length ? `Moved to this sheet (agentmap resume ID --latest): ${judged.join(", ")}.` : "");
  $("impact-changes").replaceChildren(...found.revisions.map((r) => {
    const li = document.createElement("li");
    li.textContent = `since revision ${r.revision} (${plural(r.threads, "thread")}): ` + (r.changes.length ? r.changes.join("; ") : "no change");
    return li;
  }));
  $("impact-threads").replaceChildren(...found.threads.map((t) => {
    const li = document.createElement("li");
    li.className = t.verdict || "unknown";
    const said = [...t.reasons, ...t.map.map((line) => `map: ${line}`)].join("; ");
    li.textContent = `${t.thread.slice(0, 8)} ${t.status} at ${t.at.join(", ") || "-"} (revision ${t.revision || "-"}): `
      + `${t.verdict || "not judged"}${said ? " · " + said : ""}`;
    return li;
  }));
  $("impact").hidden = false;
  $("impact-save").focus();
}

function hideImpact() { $("impact").hidden = true; }

function showChanged(text, offerOverwrite) {
  $("changed-text").textContent = text;
  $("overwrite-button").hidden = !offerOverwrite;
  $("changed").hidden = false;
}

function hideChanged() { $("changed").hidden = true; }

async function poll() {
  if (!S.file || S.saving || !$("changed").hidden) return;
  const asked = { file: S.file, version: S.version };
  try {
    const now = await api("GET", "version?file=" + encodeURIComponent(asked.file));
    // another file was opened (or this one saved or reloaded) while the answer travelled: it speaks of the old one
    if (asked.file !== S.file || asked.version !== S.version) return;
    if (now.version !== S.version && now.version !== S.dismissed && !S.saving) {
      S.dismissed = now.version;
      showChanged(`${S.file} changed on disk while open.`, false);
      say("The file changed on disk", "changed");
    }
  } catch (err) { /* the next poll tries again */ }
}

// ---- running the saved file through agentmap serve's routes (mounted at /server) --------------------------

const SERVER = "/server";
const R = { assistant: null, thread: null, nodes: new Map(), state: {}, inputs: {}, order: [], ended: false };

// the lists below are asked for again after every run; their answers can arrive out of order (a list asked for
// when a run paused can come back after the one asked for when its answer ended it): only the newest is shown
const lastAsked = { threads: 0, checkpoints: 0 };
async function newest(list, call) {
  const mine = ++lastAsked[list];
  const found = await call();
  return mine === lastAsked[list] ? found : null;
}

async function serverCall(method, path, body) {
  const init = { method, headers: credentials({ "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(SERVER + path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.message || response.statusText) + (data.hint ? ` (${data.hint})` : ""));
  return data;
}

function runStatus(text, state) {
  $("run-status").textContent = text;
  document.body.dataset.runStatus = state;
}

async function prepareRun() {
  const graph = S.tab ?? graphs()[0];
  $("run-button").disabled = true;
  delete document.body.dataset.runReady;  // until the saved file is served (a run now would use the old one)
  if (!S.valid || S.dirty || !graph) {
    $("run-note").textContent = S.valid ? "Save the sheet to run it: runs use the saved file." : "Fix the errors and save to run.";
    return;
  }
  try {
    const served = await api("POST", "serve?file=" + encodeURIComponent(S.file));
    R.assistant = served.assistants.find((a) => a.graph_id === graph || a.name === graph) || served.assistants[0];
  } catch (err) {
    $("run-note").textContent = "Cannot run: " + err.message;
    return;
  }
  const keys = R.assistant.metadata.input_keys || [];
  $("run-fields").replaceChildren(...keys.map((key) => {
    const label = document.createElement("label");
    const span = document.createElement("span");
    span.textContent = key;
    const input = document.createElement("input");
    input.name = key;
    label.append(span, input);
    return label;
  }));
  $("run-note").textContent = `Runs ${R.assistant.graph_id} as saved. Values are read as JSON when they parse.`;
  $("run-button").disabled = false;
  document.body.dataset.runReady = R.assistant.graph_id;
  listThreads();
}

const parse = (text) => { try { return JSON.parse(text); } catch (e) { return text; } };
// an answer typed in the box is read as `agentmap resume ID ANSWER` reads it (questions.typed_answer): the words as
// typed (`2`, `true`, `no` stay text, so the server's one answer rule decides what they mean), or the JSON object,
// list or string it starts like
const typedAnswer = (text) => (/^\s*[{["]/.test(text) ? parse(text) : text);

function inputKeys(node) {
  const row = body().find((r) => (r.cells[col("Node")] || "").trim() === node && graphOf(r) === R.assistant.graph_id);
  const cell = row && col("Input_Fields") >= 0 ? row.cells[col("Input_Fields")] || "" : "";
  return cell.split("|").map((k) => k.split(":")[0].trim()).filter(Boolean);
}

function resetRun() {
  R.nodes = new Map();
  R.order = [];
  R.ended = false;
  R.state = {};
  $("run-nodes").tBodies[0].replaceChildren();
  $("node-detail").hidden = true;
  $("final").textContent = "";
  $("question").hidden = true;
  for (const g of $("picture").querySelectorAll("g.node")) g.classList.remove("am-running", "am-succeeded", "am-failed", "am-paused");
  paintPath();
}

// the path taken: an edge whose source ran before its target (from start to the first node, to the end from
// the last node of a finished run); drawn green, as `agentmap run --draw` draws it
function paintPath() {
  const at = (name) => (name === "__start__" ? -1 : R.order.includes(name) ? R.order.indexOf(name) : -2);
  const edges = [...$("picture").querySelectorAll("polyline.edge[data-source]")];
  const onward = (e) => e.dataset.target !== "__end__" && at(e.dataset.target) > at(e.dataset.source);
  for (const edge of edges) {
    const from = at(edge.dataset.source);
    const to = edge.dataset.target;
    let taken = false;
    if (from === -2 || !R.order.length) taken = false; // its source did not run
    else if (to === "__end__") taken = R.ended && !edges.some((e) => e.dataset.source === edge.dataset.source && onward(e));
    else if (from === -1) taken = at(to) === 0;
    else taken = at(to) > from;
    edge.classList.toggle("am-taken", taken);
  }
}

function paintNode(node, status) {
  const g = $("picture").querySelector(`g.node[data-node="${CSS.escape(node)}"]`);
  if (g) {
    g.classList.remove("am-running", "am-succeeded", "am-failed", "am-paused");
    g.classList.add("am-" + status);
  }
}

function nodeEvent(event) {
  paintNode(event.node, event.status);
  if (!R.order.includes(event.node)) R.order.push(event.node);
  paintPath();
  let seen = R.nodes.get(event.node);
  if (!seen || (event.status === "running" && seen.status !== "running")) {
    const tr = $("run-nodes").tBodies[0].insertRow();
    for (let i = 0; i < 3; i++) tr.insertCell();
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = event.node;
    tr.cells[0].append(button);
    seen = { tr, inputs: undefined, output: undefined };
    button.addEventListener("click", () => showNode(event.node));
    R.nodes.set(event.node, seen);
  }
  Object.assign(seen, { status: event.status, duration: event.duration, error: event.error });
  seen.tr.className = event.status;
  seen.tr.dataset.status = event.status;
  seen.tr.cells[1].textContent = event.status;
  seen.tr.cells[2].textContent = event.duration == null ? "" : (event.duration * 1000).toFixed(1) + " ms";
}

function showNode(name) {
  const seen = R.nodes.get(name);
  const detail = { node: name, status: seen.status, duration_ms: seen.duration == null ? null : seen.duration * 1000,
    inputs: seen.inputs, output: seen.output, error: seen.error || undefined };
  $("node-detail").textContent = JSON.stringify(detail, null, 2);
  $("node-detail").hidden = false;
}

function updates(payload) {
  for (const [node, update] of Object.entries(payload || {})) {
    if (node.startsWith("__")) continue;
    const seen = R.nodes.get(node) || {};
    seen.inputs = Object.fromEntries(inputKeys(node).map((k) => [k, R.state[k]]));
    seen.output = update;
    if (!R.nodes.has(node)) R.nodes.set(node, seen);
  }
}

function values(payload) {
  const shown = { ...payload };
  const asked = shown.__interrupt__;
  delete shown.__interrupt__;
  R.state = shown;
  $("final").textContent = JSON.stringify(shown, null, 2);
  if (asked && asked.length) ask(asked[0].value);
}

function ask(value) {
  const node = value && value.node ? value.node + ": " : "";
  $("question-text").textContent = node + (value && typeof value === "object" && "question" in value ? value.question : JSON.stringify(value));
  $("question").hidden = false;
}

async function stream(body) {
  const headers = credentials({ "Content-Type": "application/json", Accept: "text/event-stream" });
  const response = await fetch(`${SERVER}/threads/${encodeURIComponent(R.thread)}/runs/stream`, {
    method: "POST", headers, body: JSON.stringify({ assistant_id: R.assistant.assistant_id, stream_mode: ["values", "updates", "nodes"], durability: "sync", ...body }),
  });
  if (!response.ok) {
    const err = await response.json().catch(() => ({ message: response.statusText }));
    throw new Error(err.message + (err.hint ? ` (${err.hint})` : ""));
  }
  const reader = response.body.getReader();
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
      if (event === "nodes") nodeEvent(payload);
      else if (event === "updates") updates(payload);
      else if (event === "values") values(payload);
      else if (event === "nodes/summary") outcome = payload;
      else if (event === "error") throw new Error(payload.message);
    }
  }
  return outcome;
}

async function go(body) {
  $("question").hidden = true;
  runStatus("running", "running");
  try {
    const outcome = await stream(body);
    R.ended = Boolean(outcome && !outcome.paused);
    paintPath();
    if (!outcome) runStatus("stopped", "error");
    else if (outcome.paused) runStatus("paused: waiting for an answer", "paused");
    else runStatus(outcome.success ? "succeeded" : "failed", outcome.success ? "succeeded" : "failed");
  } catch (err) {
    runStatus(err.message, "error");
    if (body.command) $("question").hidden = false; // a refused answer leaves the run paused: ask again
  }
  listThreads();
  listCheckpoints();
}

// every step of a studio run is checkpointed (durability "sync"): any of them can be run again, with the file
// as saved now, on the state the run had there. Listed: the thread's current branch, from its newest checkpoint
// back through each one's parent; the steps a fork left behind are not
async function listCheckpoints() {
  if (!R.thread) return;
  try {
    const history = await newest("checkpoints", () => serverCall("POST", `/threads/${encodeURIComponent(R.thread)}/history`, { limit: 100 }));
    if (!history) return;
    const byId = new Map(history.map((s) => [s.checkpoint.checkpoint_id, s]));
    const branch = [];
    for (let s = history[0]; s; s = byId.get((s.parent_checkpoint || {}).checkpoint_id)) branch.push(s);
    const open = branch.filter((s) => (s.next || []).length && !(s.next || []).includes("__start__")).reverse();
    $("checkpoints").replaceChildren(...open.map((s) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      const step = (s.metadata || {}).step;
      button.textContent = `Fork from step ${step} (next: ${s.next.join(", ")})`;
      button.addEventListener("click", () => fork(s.checkpoint.checkpoint_id));
      li.append(button);
      return li;
    }));
  } catch (err) { /* a convenience: the run reported any problem */ }
}

// a fork with changed values: the server writes them into the checkpoint's state as a new checkpoint that keeps
// its next nodes (threads.update_state), and the run goes on from that one
async function fork(checkpointId) {
  if (!document.body.dataset.runReady) { runStatus("Save the sheet first: forks run the saved file.", "error"); return; }
  const text = $("fork-values").value.trim();
  let from = checkpointId;
  if (text) {
    let changed;
    try { changed = JSON.parse(text); } catch (err) { runStatus("The state to change is not JSON: " + err.message, "error"); return; }
    if (!changed || typeof changed !== "object" || Array.isArray(changed)) {
      runStatus('The state to change must be a JSON object, e.g. {"request": "a phone"}', "error");
      return;
    }
    try {
      const made = await serverCall("POST", `/threads/${encodeURIComponent(R.thread)}/state`, { values: changed, checkpoint_id: checkpointId });
      from = made.checkpoint.checkpoint_id;
    } catch (err) { runStatus(err.message, "error"); return; }
  }
  resetRun();
  // the saved file's version, not the one the thread ran (the server refuses a fork that version cannot go on from)
  await go({ input: null, checkpoint_id: from, config: { configurable: { assistant_version: "latest" } } });
}

async function listThreads() {
  if (!R.assistant) return;
  try {
    const found = await newest("threads", () => serverCall("POST", "/threads/search", { metadata: { graph_id: R.assistant.graph_id }, limit: 20 }));
    if (!found) return;
    $("threads").replaceChildren(...found.map((t) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `${t.thread_id.slice(0, 8)} · ${STATUS[t.status] || t.status} · ${(t.updated_at || "").slice(0, 19).replace("T", " ")}`;
      button.addEventListener("click", () => reopen(t.thread_id));
      li.append(button);
      return li;
    }));
  } catch (err) { /* the list is a convenience: the run itself reported any problem */ }
}

async function reopen(threadId) {
  resetRun();
  R.thread = threadId;
  const state = await serverCall("GET", `/threads/${encodeURIComponent(threadId)}/state`);
  values(state.values || {});
  const asked = (state.tasks || []).flatMap((t) => t.interrupts || []);
  if (asked.length) ask(asked[0].value);
  listCheckpoints();
  runStatus(`reopened ${threadId.slice(0, 8)}` + (asked.length ? ": paused, waiting for an answer" : ""), asked.length ? "paused" : "reopened");
}

$("run-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!R.assistant) return;
  const input = {};
  for (const el of $("run-fields").querySelectorAll("input")) if (el.value !== "") input[el.name] = parse(el.value);
  resetRun();
  try {
    R.thread = (await serverCall("POST", "/threads", { metadata: { graph_id: R.assistant.graph_id } })).thread_id;
  } catch (err) {
    runStatus(err.message, "error");
    return;
  }
  await go({ input });
});

$("question").addEventListener("submit", async (e) => {
  e.preventDefault();
  await go({ command: { resume: typedAnswer($("answer").value) } });
});

// ---- wiring ---------------------------------------------------------------------------------------------

$("grid").tBodies[0].addEventListener("keydown", gridKeys);
$("grid").tBodies[0].addEventListener("click", (e) => {
  const cell = e.target.closest("td[role=gridcell]");
  if (!cell || S.editing) return;
  const row = [...S.trs.entries()].find(([, tr]) => tr === cell.parentElement)?.[0];
  if (row) select(row, Number(cell.getAttribute("aria-colindex")) - 1);
});
$("grid").tBodies[0].addEventListener("dblclick", () => startEdit());
$("add-row").addEventListener("click", addRow);
$("remove-row").addEventListener("click", removeRow);
$("row-up").addEventListener("click", () => moveRow(-1));
$("row-down").addEventListener("click", () => moveRow(1));
$("add-column").addEventListener("change", (e) => { addColumn(e.target.value); e.target.value = ""; });
$("save-button").addEventListener("click", () => save(false));
$("impact-save").addEventListener("click", () => save(false, true));
$("impact-cancel").addEventListener("click", () => { hideImpact(); say("Not saved", "edited"); });
$("reload-button").addEventListener("click", () => openFile(S.file));
$("overwrite-button").addEventListener("click", () => { hideChanged(); save(true); });
$("dismiss-button").addEventListener("click", hideChanged);
$("file-select").addEventListener("change", (e) => openFile(e.target.value));
$("api-key").value = sessionStorage.getItem("agentmap-studio-key") || "";
$("api-key").addEventListener("change", () => { sessionStorage.setItem("agentmap-studio-key", $("api-key").value); start(); });
$("authorization").value = sessionStorage.getItem("agentmap-studio-authorization") || "";
$("authorization").addEventListener("change", () => sessionStorage.setItem("agentmap-studio-authorization", $("authorization").value));
document.addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") { e.preventDefault(); save(false); }
});
window.addEventListener("beforeunload", (e) => { if (S.dirty) e.preventDefault(); });  // unsaved changes
setInterval(poll, 700);
start();
