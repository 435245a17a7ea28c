// Lethe's web console. Plain JavaScript, no dependencies, no build step.
// Every API call is signed here with the account key (HMAC-SHA256 through
// WebCrypto), exactly as the Cosmos DB SDKs sign theirs; the key lives in
// sessionStorage only. Everything that comes from the server (ids, documents,
// messages) is put into the page as text, never as HTML.

// The Cosmos DB emulator's well-known key: a server started without --key
// uses it, and the console then connects without asking.
const EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const KEY_STORAGE = "lethe.accountKey";
const PAGE_SIZE = 50;
const REFRESH_MS = 2000;

const $ = (id) => document.getElementById(id);

/** An HTTP error from the server, with its Cosmos-shaped message. */
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// ---------------------------------------------------------------- signing

let signingKey = null; // a CryptoKey for the current account key

async function importKey(base64) {
  const raw = Uint8Array.from(atob(base64.trim()), (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/** The resource type and link a path's segments sign with (gateway/auth.go resourceOf). */
function resourceOf(segs) {
  const n = segs.length;
  if (n === 0) return ["", ""];
  if (n % 2 === 1) return [segs[n - 1], segs.slice(0, n - 1).join("/")];
  if (n === 2 && segs[0] === "offers") return ["offers", segs[1].toLowerCase()];
  return [segs[n - 2], segs.join("/")];
}

async function authorization(verb, segs, date) {
  const [type, link] = resourceOf(segs);
  const payload = `${verb.toLowerCase()}\n${type.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
  const mac = await crypto.subtle.sign("HMAC", signingKey, new TextEncoder().encode(payload));
  const sig = btoa(String.fromCharCode(...new Uint8Array(mac)));
  return encodeURIComponent(`type=master&ver=1.0&sig=${sig}`);
}

/**
 * Calls the API: segs are the path's decoded segments (ids as they are).
 * Resolves with {status, headers, body}; rejects with an ApiError carrying
 * the server's message for any status of 400 or more.
 */
async function api(method, segs, { body, headers = {} } = {}) {
  const date = new Date().toUTCString();
  const h = {
    "x-ms-date": date,
    "x-ms-version": "2020-11-05",
    authorization: await authorization(method, segs, date),
    accept: "application/json",
    ...headers,
  };
  if (body !== undefined && !h["content-type"]) h["content-type"] = "application/json";
  const path = "/" + segs.map(encodeURIComponent).join("/");
  const res = await fetch(path, { method, headers: h, body, cache: "no-store" });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.status >= 400) {
    const msg = json && typeof json.message === "string" ? json.message : `${res.status} ${res.statusText}`;
    throw new ApiError(res.status, msg);
  }
  return { status: res.status, headers: res.headers, body: json };
}

// ---------------------------------------------------------------- messages

function showAlert(message) {
  const el = $("alert");
  el.textContent = message;
  el.hidden = false;
  showStatus("");
}

function clearAlert() {
  $("alert").textContent = "";
  $("alert").hidden = true;
}

function showStatus(message) {
  const el = $("status");
  el.textContent = message;
  el.hidden = message === "";
}

/** Runs fn, showing any error it throws in the alert. */
async function guarded(fn) {
  try {
    return await fn();
  } catch (err) {
    showAlert(err instanceof ApiError || err instanceof SyntaxError ? err.message : String(err));
    return undefined;
  }
}

// ---------------------------------------------------------------- DOM helpers

/** Creates an element with properties and children (strings become text). */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k in node && typeof v !== "string") node[k] = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
  }
  return node;
}

const svgNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c);
  return node;
}

function isoSeconds(unix) {
  return new Date(unix * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function formatAge(seconds) {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// ---------------------------------------------------------------- routes

const enc = encodeURIComponent;

/** Parses location.hash: {db, coll, view} (any may be undefined). */
function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "");
  const dec = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const r = {};
  if (parts[0] === "dbs" && parts[1] !== undefined) {
    r.db = dec(parts[1]);
    if (parts[2] === "colls" && parts[3] !== undefined) {
      r.coll = dec(parts[3]);
      r.view = ["settings", "items", "query"].includes(parts[4]) ? parts[4] : "settings";
    }
  }
  return r;
}

const dbHref = (db) => `#/dbs/${enc(db)}`;
const collHref = (db, coll, view = "settings") => `#/dbs/${enc(db)}/colls/${enc(coll)}/${view}`;

// ---------------------------------------------------------------- state

const state = {
  tree: [], // [{id, colls: [ids]}]
  timer: null, // the settings page's refresh
  backlogSamples: [], // [{wall, documents, purged}] of the container shown, since the page opened
  samplesFor: "",
  renderToken: 0, // bumps on every navigation: a stale async render stops
};

// ---------------------------------------------------------------- connect

async function connect(base64, fromUser) {
  try {
    signingKey = await importKey(base64);
  } catch {
    if (fromUser) showAlert("The account key is not valid base64.");
    return false;
  }
  try {
    await api("GET", ["dbs"]);
  } catch (err) {
    signingKey = null;
    if (fromUser) showAlert(err.message);
    return false;
  }
  sessionStorage.setItem(KEY_STORAGE, base64);
  clearAlert();
  $("connect").hidden = true;
  $("app").hidden = false;
  await refreshClock();
  await refreshTree();
  await render();
  return true;
}

async function start() {
  $("connect-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    connect($("account-key").value, true);
  });
  $("new-db").addEventListener("click", openDatabaseDialog);
  $("new-coll").addEventListener("click", openContainerDialog);
  $("clock-advance").addEventListener("click", advanceClock);
  for (const d of document.querySelectorAll("dialog")) {
    d.querySelector(".cancel").addEventListener("click", () => d.close());
  }
  $("db-form").addEventListener("submit", createDatabase);
  $("coll-form").addEventListener("submit", createContainer);
  window.addEventListener("hashchange", () => {
    clearAlert();
    showStatus("");
    render();
  });
  const saved = sessionStorage.getItem(KEY_STORAGE);
  if (saved && (await connect(saved, false))) return;
  if (await connect(EMULATOR_KEY, false)) return;
  $("connect").hidden = false;
  $("account-key").focus();
}

// ---------------------------------------------------------------- clock

async function refreshClock() {
  const r = await guarded(() => api("GET", ["_lethe", "clock"]));
  if (!r) return;
  $("clock").hidden = false;
  showClock(r.body.nowRfc3339);
  $("clock-manual").hidden = !r.body.manual;
}

/** Shows the server time (RFC 3339) in the header. */
function showClock(rfc3339) {
  $("clock-now").textContent = rfc3339;
  $("clock-now").dateTime = rfc3339;
}

/** A value typed into a field, as JSON text: a number as typed, anything else as a string. */
function typedJSON(raw) {
  return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(raw) ? raw : JSON.stringify(raw);
}

async function advanceClock() {
  const body = `{"advanceSeconds":${typedJSON($("clock-seconds").value.trim())}}`;
  const r = await guarded(() => api("POST", ["_lethe", "clock"], { body }));
  if (!r) return;
  clearAlert();
  showClock(r.body.nowRfc3339);
  await render();
}

// ---------------------------------------------------------------- tree

async function refreshTree() {
  const r = await guarded(() => api("GET", ["dbs"]));
  if (!r) return;
  const dbs = r.body.Databases.map((d) => d.id).sort();
  const tree = [];
  for (const db of dbs) {
    const c = await guarded(() => api("GET", ["dbs", db, "colls"]));
    tree.push({ id: db, colls: c ? c.body.DocumentCollections.map((x) => x.id).sort() : [] });
  }
  state.tree = tree;
  drawTree();
}

function drawTree() {
  const route = parseRoute();
  const ul = $("tree");
  ul.replaceChildren(
    ...state.tree.map((db) =>
      el(
        "li",
        {},
        el("a", { href: dbHref(db.id), "aria-current": route.db === db.id && !route.coll ? "page" : undefined, text: db.id }),
        el(
          "ul",
          {},
          ...db.colls.map((coll) =>
            el(
              "li",
              {},
              el("a", {
                href: collHref(db.id, coll),
                "aria-current": route.db === db.id && route.coll === coll ? "page" : undefined,
                text: coll,
              }),
            ),
          ),
        ),
      ),
    ),
  );
  if (state.tree.length === 0) ul.replaceChildren(el("li", { class: "muted", text: "No databases yet." }));
}

// ---------------------------------------------------------------- dialogs

/** The Time to Live radio group, shared by the settings page and the new container dialog. */
function ttlControl(idPrefix, defaultTtl) {
  const choice = defaultTtl === undefined || defaultTtl === null ? "off" : defaultTtl === -1 ? "nodefault" : "on";
  const legendId = `${idPrefix}-legend`;
  const secondsId = `${idPrefix}-seconds`;
  const radio = (value, label) =>
    el("label", {}, el("input", { type: "radio", name: `${idPrefix}-ttl`, value, checked: choice === value }), label);
  const seconds = el("input", {
    id: secondsId,
    type: "text",
    inputmode: "numeric",
    value: choice === "on" ? String(defaultTtl) : "3600",
    autocomplete: "off",
  });
  const secondsRow = el("div", { hidden: choice !== "on" }, el("label", { for: secondsId, text: "Time to live (seconds)" }), seconds);
  const group = el(
    "div",
    { role: "radiogroup", "aria-labelledby": legendId, class: "radios" },
    radio("off", "Off"),
    radio("nodefault", "On (no default)"),
    radio("on", "On"),
  );
  group.addEventListener("change", () => {
    secondsRow.hidden = group.querySelector("input:checked").value !== "on";
  });
  const node = el("div", {}, el("p", { id: legendId, class: "legend", text: "Time to Live" }), group, secondsRow);
  /** The property to send: undefined (Off), -1, or the seconds as typed (raw JSON text). */
  node.value = () => {
    const v = group.querySelector("input:checked").value;
    if (v === "off") return undefined;
    if (v === "nodefault") return "-1";
    return typedJSON(seconds.value.trim());
  };
  return node;
}

/** Builds a JSON body from an object and an optional defaultTtl given as raw JSON text. */
function withDefaultTtl(obj, rawTtl) {
  const copy = { ...obj };
  delete copy.defaultTtl;
  let text = JSON.stringify(copy);
  if (rawTtl !== undefined) text = `${text.slice(0, -1)}${text.length > 2 ? "," : ""}"defaultTtl":${rawTtl}}`;
  return text;
}

function openDatabaseDialog() {
  $("db-id").value = "";
  $("db-dialog").showModal();
  $("db-id").focus();
}

async function createDatabase(ev) {
  ev.preventDefault();
  const id = $("db-id").value;
  const r = await guarded(() => api("POST", ["dbs"], { body: JSON.stringify({ id }) }));
  if (!r) return;
  $("db-dialog").close();
  await refreshTree();
  location.hash = dbHref(id);
}

let collTTL = null;
function openContainerDialog() {
  const route = parseRoute();
  $("coll-db-id").value = route.db ?? "";
  $("coll-id").value = "";
  $("coll-pk").value = "/pk";
  collTTL = ttlControl("new-coll", undefined);
  $("coll-ttl").replaceChildren(collTTL);
  $("coll-dialog").showModal();
  ($("coll-db-id").value ? $("coll-id") : $("coll-db-id")).focus();
}

async function createContainer(ev) {
  ev.preventDefault();
  const db = $("coll-db-id").value;
  const id = $("coll-id").value;
  const def = { id, partitionKey: { paths: [$("coll-pk").value], kind: "Hash", version: 2 } };
  const r = await guarded(() => api("POST", ["dbs", db, "colls"], { body: withDefaultTtl(def, collTTL.value()) }));
  if (!r) return;
  $("coll-dialog").close();
  await refreshTree();
  location.hash = collHref(db, id);
}

// ---------------------------------------------------------------- pages

async function render() {
  const token = ++state.renderToken;
  clearInterval(state.timer);
  state.timer = null;
  drawTree();
  const route = parseRoute();
  const main = $("main");
  if (!route.db) {
    main.replaceChildren(
      el("h1", { text: "Databases" }),
      el("p", { text: "Pick a database or a container on the left, or create one." }),
    );
    return;
  }
  if (!route.coll) return renderDatabase(route.db, token);
  const header = [
    el("h1", {}, el("span", { class: "muted", text: `${route.db} / ` }), route.coll),
    el(
      "nav",
      { class: "tabs", "aria-label": "Container" },
      ...[
        ["settings", "Settings"],
        ["items", "Items"],
        ["query", "Query"],
      ].map(([v, label]) => el("a", { href: collHref(route.db, route.coll, v), "aria-current": route.view === v ? "page" : undefined, text: label })),
    ),
  ];
  const body = el("div");
  main.replaceChildren(...header, body);
  if (route.view === "items") return renderItems(route, body, token);
  if (route.view === "query") return renderQuery(route, body);
  return renderSettings(route, body, token);
}

async function renderDatabase(db, token) {
  const main = $("main");
  const r = await guarded(() => api("GET", ["dbs", db, "colls"]));
  if (token !== state.renderToken) return;
  const colls = r ? r.body.DocumentCollections.map((c) => c.id).sort() : [];
  main.replaceChildren(
    el("h1", { text: db }),
    el("button", { type: "button", class: "danger", onclick: () => deleteDatabase(db), text: "Delete" }),
    el("h2", { text: "Containers" }),
    colls.length
      ? el("ul", {}, ...colls.map((c) => el("li", {}, el("a", { href: collHref(db, c), text: c }))))
      : el("p", { class: "muted", text: "No containers yet." }),
  );
}

async function deleteDatabase(db) {
  if (!confirm(`Delete the database "${db}" and everything in it?`)) return;
  const r = await guarded(() => api("DELETE", ["dbs", db]));
  if (!r) return;
  await refreshTree();
  location.hash = "#/";
  showStatus(`Deleted ${db}`);
}

async function deleteContainer(db, coll) {
  if (!confirm(`Delete the container "${coll}" and all its documents?`)) return;
  const r = await guarded(() => api("DELETE", ["dbs", db, "colls", coll]));
  if (!r) return;
  await refreshTree();
  location.hash = dbHref(db);
  showStatus(`Deleted ${coll}`);
}

// ---------------------------------------------------------------- settings

async function findOffer(rid) {
  const r = await guarded(() => api("GET", ["offers"]));
  return r ? r.body.Offers.find((o) => o.offerResourceId === rid) : undefined;
}

async function renderSettings({ db, coll }, body, token) {
  const r = await guarded(() => api("GET", ["dbs", db, "colls", coll]));
  if (!r || token !== state.renderToken) return;
  const def = r.body;
  const offer = await findOffer(def._rid);
  if (token !== state.renderToken) return;
  const ttl = ttlControl("settings", def.defaultTtl);
  const save = el("button", { type: "button", text: "Save" });
  save.addEventListener("click", async () => {
    const cur = await guarded(() => api("GET", ["dbs", db, "colls", coll]));
    if (!cur) return;
    const res = await guarded(() => api("PUT", ["dbs", db, "colls", coll], { body: withDefaultTtl(cur.body, ttl.value()) }));
    if (!res) return;
    clearAlert();
    showStatus("Saved");
    refreshStatus(db, coll, token);
  });
  const throughput = offer
    ? offer.content?.offerAutopilotSettings
      ? `autoscale, up to ${offer.content.offerAutopilotSettings.maxThroughput} RU/s`
      : `${offer.content?.offerThroughput} RU/s`
    : "none of its own";
  const props = el(
    "dl",
    { class: "props" },
    el("dt", { text: "id" }),
    el("dd", { text: def.id }),
    el("dt", { text: "Partition key" }),
    el("dd", { text: (def.partitionKey?.paths ?? []).join(", ") }),
    el("dt", { text: "Throughput" }),
    el("dd", { text: throughput }),
  );
  const backlog = el(
    "section",
    { class: "card", "aria-labelledby": "backlog-title" },
    el("h2", { id: "backlog-title", text: "TTL backlog" }),
    el("p", { id: "backlog-count", class: "big" }),
    el("p", { id: "backlog-oldest" }),
    el("p", { id: "backlog-rate" }),
    el("div", { id: "backlog-history" }),
  );
  const minutes = el(
    "figure",
    { class: "card", "aria-labelledby": "upcoming-title" },
    el("figcaption", { id: "upcoming-title", text: "Upcoming expirations" }),
    el("p", { class: "muted", text: "Documents expiring in each of the next 60 minutes, from the server's expiry index." }),
    el("div", { id: "upcoming-chart" }),
    el("details", {}, el("summary", { text: "As a table" }), el("div", { id: "upcoming-table" })),
  );
  const hours = el(
    "figure",
    { class: "card", "aria-labelledby": "upcoming-hours-title" },
    el("figcaption", { id: "upcoming-hours-title", text: "Upcoming expirations by hour" }),
    el("p", { class: "muted", text: "Documents expiring in each of the next 24 hours." }),
    el("div", { id: "upcoming-hours-chart" }),
    el("details", {}, el("summary", { text: "As a table" }), el("div", { id: "upcoming-hours-table" })),
  );
  body.replaceChildren(
    el(
      "div",
      { class: "cards" },
      el(
        "section",
        { class: "card", "aria-labelledby": "ttl-title" },
        el("h2", { id: "ttl-title", text: "Settings" }),
        props,
        ttl,
        el("div", { class: "buttons" }, save),
        el("details", {}, el("summary", { text: "Indexing policy" }), el("pre", { text: JSON.stringify(def.indexingPolicy, null, 2) })),
        el("div", { class: "buttons" }, el("button", { type: "button", class: "danger", onclick: () => deleteContainer(db, coll), text: "Delete" })),
      ),
      backlog,
      minutes,
      hours,
    ),
  );
  if (state.samplesFor !== `${db}/${coll}`) {
    state.samplesFor = `${db}/${coll}`;
    state.backlogSamples = [];
  }
  await refreshStatus(db, coll, token);
  if (token === state.renderToken) state.timer = setInterval(() => refreshStatus(db, coll, token), REFRESH_MS);
}

async function refreshStatus(db, coll, token) {
  let r;
  try {
    r = await api("GET", ["_lethe", "dbs", db, "colls", coll, "ttl"]);
  } catch (err) {
    if (token === state.renderToken) showAlert(err.message);
    return;
  }
  if (token !== state.renderToken) return;
  const st = r.body;
  showClock(isoSeconds(st.now));
  const b = st.backlog;
  $("backlog-count").textContent = `Expired, awaiting purge: ${b.documents}`;
  $("backlog-oldest").textContent =
    b.oldestAgeSeconds === undefined ? "Oldest: none waiting" : `Oldest: expired ${b.oldestExpired}, ${formatAge(b.oldestAgeSeconds)} ago`;
  const samples = state.backlogSamples;
  samples.push({ wall: Date.now(), documents: b.documents, purged: st.purged });
  while (samples.length > 150) samples.shift(); // five minutes at one sample every 2 s
  const first = samples[0];
  const last = samples[samples.length - 1];
  const secs = (last.wall - first.wall) / 1000;
  $("backlog-rate").textContent =
    secs >= 1 ? `Purge rate: ${((last.purged - first.purged) / secs).toFixed(1)} documents/s (purged since start: ${st.purged})` : `Purged since start: ${st.purged}`;
  $("backlog-history").replaceChildren(sparkline(samples.map((s) => s.documents)));
  drawBars($("upcoming-chart"), $("upcoming-table"), st.upcoming.byMinute, st.now, 60, "Minute");
  drawBars($("upcoming-hours-chart"), $("upcoming-hours-table"), st.upcoming.byHour, st.now, 3600, "Hour");
}

/** A line of the backlog over the samples taken since the page opened. */
function sparkline(values) {
  const w = 300;
  const h = 40;
  const max = Math.max(1, ...values);
  const pts = values.map((v, i) => `${values.length === 1 ? 0 : (i / (values.length - 1)) * w},${h - (v / max) * (h - 2) - 1}`);
  return el(
    "div",
    {},
    el("p", { class: "muted", text: "Backlog since this page opened:" }),
    svg("svg", { class: "spark", width: w, height: h, viewBox: `0 0 ${w} ${h}`, "aria-hidden": "true" }, svg("polyline", { points: pts.join(" ") })),
  );
}

/** Draws one bar per bucket, and the same data as a table for screen readers. */
function drawBars(chartBox, tableBox, counts, now, step, unit) {
  const w = 600;
  const h = 120;
  const max = Math.max(1, ...counts);
  const bw = w / counts.length;
  const chart = svg("svg", {
    class: "bars",
    width: "100%",
    viewBox: `0 0 ${w} ${h + 14}`,
    role: "img",
    "aria-label": `${counts.reduce((a, b) => a + b, 0)} documents expire in the next ${counts.length} ${unit.toLowerCase()}s; the table has the counts`,
  });
  counts.forEach((c, i) => {
    const bh = (c / max) * h;
    if (c > 0) chart.append(svg("rect", { x: i * bw + 1, y: h - bh, width: Math.max(1, bw - 2), height: bh }, svg("title", {}, `${c}`)));
  });
  chart.append(svg("line", { x1: 0, y1: h, x2: w, y2: h }));
  const label = svg("text", { x: 0, y: h + 12 });
  label.textContent = `now`;
  const labelEnd = svg("text", { x: w - 40, y: h + 12 });
  labelEnd.textContent = `+${counts.length} ${unit === "Minute" ? "min" : "h"}`;
  chart.append(label, labelEnd);
  chartBox.replaceChildren(chart);
  tableBox.replaceChildren(
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: unit }), el("th", { scope: "col", text: "From" }), el("th", { scope: "col", text: "Count" }))),
      el(
        "tbody",
        {},
        ...counts.map((c, i) => el("tr", {}, el("td", { text: `+${i}` }), el("td", { text: isoSeconds(now + i * step) }), el("td", { text: String(c) }))),
      ),
    ),
  );
}

// ---------------------------------------------------------------- items

/** The value at a partition key path ("/a/b") of doc; undefined if it has none. */
function valueAt(doc, path) {
  let v = doc;
  for (const part of path.split("/").filter(Boolean)) v = v === null || typeof v !== "object" ? undefined : v[part];
  return v;
}

/** The partition key value of doc at the container's paths, as text. */
function pkText(doc, paths) {
  const show = (v) => (v === undefined ? "(none)" : JSON.stringify(v));
  return paths.map((p) => show(valueAt(doc, p))).join(", ");
}

/** The x-ms-documentdb-partitionkey header for doc ({} for a value it lacks). */
function pkHeader(doc, paths) {
  return JSON.stringify(paths.map((p) => valueAt(doc, p) ?? {}));
}

async function renderItems({ db, coll }, body, token) {
  const r = await guarded(() => api("GET", ["dbs", db, "colls", coll]));
  if (!r || token !== state.renderToken) return;
  const paths = r.body.partitionKey?.paths ?? [];
  const tbody = el("tbody");
  const more = el("button", { type: "button", class: "secondary", hidden: true, text: "Load more" });
  const editorBox = el("div", { class: "editor" });
  let continuation = "";

  const load = async (reset) => {
    if (reset) {
      tbody.replaceChildren();
      continuation = "";
    }
    const headers = { "x-ms-max-item-count": String(PAGE_SIZE) };
    if (continuation) headers["x-ms-continuation"] = continuation;
    const page = await guarded(() => api("GET", ["_lethe", "dbs", db, "colls", coll, "items"], { headers }));
    if (!page || token !== state.renderToken) return;
    for (const item of page.body.items) {
      const doc = item.document;
      tbody.append(
        el(
          "tr",
          {},
          el("td", {}, el("button", { type: "button", class: "link", onclick: () => openEditor(doc), text: doc.id })),
          el("td", { text: pkText(doc, paths) }),
          el("td", { text: item.expires ?? "never" }),
        ),
      );
    }
    continuation = page.body.continuation ?? "";
    more.hidden = !continuation;
  };
  more.addEventListener("click", () => load(false));

  const openEditor = (doc) => {
    const isNew = doc === null;
    const start = isNew ? newItemTemplate(paths) : stripSystem(doc);
    const area = el("textarea", { id: "item-json", rows: 16, spellcheck: "false" });
    area.value = JSON.stringify(start, null, 2);
    const save = el("button", { type: "button", text: "Save" });
    save.addEventListener("click", async () => {
      let parsed;
      try {
        parsed = JSON.parse(area.value);
      } catch (err) {
        showAlert(`The document is not valid JSON: ${err.message}`);
        return;
      }
      const headers = { "x-ms-documentdb-partitionkey": pkHeader(parsed, paths) };
      const res = isNew
        ? await guarded(() => api("POST", ["dbs", db, "colls", coll, "docs"], { body: area.value, headers }))
        : await guarded(() => api("PUT", ["dbs", db, "colls", coll, "docs", doc.id], { body: area.value, headers }));
      if (!res) return;
      clearAlert();
      showStatus(isNew ? `Created ${res.body.id}` : `Saved ${res.body.id}`);
      editorBox.replaceChildren();
      await load(true);
    });
    const buttons = [save];
    if (!isNew) {
      buttons.push(
        el("button", {
          type: "button",
          class: "danger",
          text: "Delete",
          onclick: async () => {
            if (!confirm(`Delete the document "${doc.id}"?`)) return;
            const headers = { "x-ms-documentdb-partitionkey": pkHeader(doc, paths) };
            const res = await guarded(() => api("DELETE", ["dbs", db, "colls", coll, "docs", doc.id], { headers }));
            if (!res) return;
            clearAlert();
            showStatus(`Deleted ${doc.id}`);
            editorBox.replaceChildren();
            await load(true);
          },
        }),
      );
    }
    buttons.push(el("button", { type: "button", class: "secondary", text: "Close", onclick: () => editorBox.replaceChildren() }));
    editorBox.replaceChildren(
      el("h2", { text: isNew ? "New item" : `Item ${doc.id}` }),
      el("label", { for: "item-json", text: "Document" }),
      area,
      el("div", { class: "buttons" }, ...buttons),
    );
    area.focus();
  };

  body.replaceChildren(
    el(
      "div",
      { class: "buttons" },
      el("button", { type: "button", text: "New item", onclick: () => openEditor(null) }),
      el("button", { type: "button", class: "secondary", text: "Refresh", onclick: () => load(true) }),
    ),
    el(
      "table",
      { "aria-label": "Items" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "id" }), el("th", { scope: "col", text: "Partition key" }), el("th", { scope: "col", text: "Expires" }))),
      tbody,
    ),
    el("div", { class: "buttons" }, more),
    editorBox,
  );
  await load(true);
}

function newItemTemplate(paths) {
  const doc = { id: "new-item" };
  for (const p of paths) {
    const parts = p.split("/").filter(Boolean);
    let o = doc;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) o[part] = "";
      else o = o[part] ??= {};
    });
  }
  return doc;
}

function stripSystem(doc) {
  const copy = { ...doc };
  for (const k of ["_rid", "_self", "_etag", "_attachments", "_ts"]) delete copy[k];
  return copy;
}

// ---------------------------------------------------------------- query

function renderQuery({ db, coll }, body) {
  const text = el("textarea", { id: "query-text", rows: 4, spellcheck: "false" });
  text.value = "SELECT * FROM c";
  const results = el("pre", { id: "query-results" });
  const charge = el("p", { id: "query-charge" });
  const more = el("button", { type: "button", class: "secondary", hidden: true, text: "Load more" });
  let rows = [];
  let total = 0;
  let continuation = "";
  let query = "";

  const page = async () => {
    const headers = {
      "content-type": "application/query+json",
      "x-ms-documentdb-isquery": "True",
      "x-ms-documentdb-query-enablecrosspartition": "True",
      "x-ms-max-item-count": String(PAGE_SIZE),
      // The console runs no query pipeline: the server evaluates the whole query.
      "x-lethe-serve-cross-partition": "true",
    };
    if (continuation) headers["x-ms-continuation"] = continuation;
    const r = await guarded(() => api("POST", ["dbs", db, "colls", coll, "docs"], { body: JSON.stringify({ query, parameters: [] }), headers }));
    if (!r) return;
    clearAlert();
    rows = rows.concat(r.body.Documents);
    total += Number(r.headers.get("x-ms-request-charge") ?? 0);
    continuation = r.headers.get("x-ms-continuation") ?? "";
    results.textContent = JSON.stringify(rows, null, 2);
    charge.textContent = `Request charge: ${Math.round(total * 100) / 100} RUs`;
    more.hidden = !continuation;
  };
  const run = el("button", { type: "button", text: "Run" });
  run.addEventListener("click", () => {
    rows = [];
    total = 0;
    continuation = "";
    query = text.value;
    results.textContent = "";
    charge.textContent = "";
    more.hidden = true;
    page();
  });
  more.addEventListener("click", page);
  body.replaceChildren(
    el("label", { for: "query-text", text: "Query" }),
    text,
    el("div", { class: "buttons" }, run),
    el("section", { "aria-label": "Results" }, el("h2", { text: "Results" }), charge, results),
    el("div", { class: "buttons" }, more),
  );
}

start();
