// SQL queries through the official JavaScript SDK (@azure/cosmos 4.9.3):
// container.items.query(spec, {maxItemCount, partitionKey, continuationToken,
// populateIndexMetrics}).fetchNext()/fetchAll(), client.databases.query,
// database.containers.query and client.offers.query.
//
// Every expectation is computed here from the documents with Cosmos DB's
// semantics (undefined, three-valued logic, the cross-type sort order), never
// copied from the server. The same table of queries runs cross-partition,
// paged (maxItemCount 1, 2, 5), resumed from a continuation token in a new
// iterator, scoped to each partition, and over a container whose documents all
// share one partition key value.
//
// How the SDK runs these queries against Lethe: for every query it sends the
// query itself and, in parallel, a query-plan request. Lethe evaluates
// everything on the server (cross-partition ORDER BY, GROUP BY, aggregates,
// DISTINCT, OFFSET/LIMIT) and answers the plan request with a trivial plan; the
// SDK uses a plan only when the direct query fails with 400 and
// additionalErrorInfo, so it never re-sorts or re-aggregates client-side and
// returns the server's rows as they are (checked on the wire below). With
// forceQueryPlan the SDK does use the trivial plan: it reads the partition key
// ranges and runs the unchanged query against range "0" (also checked).
//
// The file runs one in-memory server with --disable-purger (the TTL tests need
// expiry decided inline, not by physical deletion), plus an on-disk server for
// the restart test.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { fileFixture, rejectsWithCode, sleep, sleepUntil } from "../lib/helpers.js";
import { startProxy } from "../lib/proxy.js";
import { client, makeTempDir, removeDir, startServer, uid } from "../lib/server.js";

const { srv, cosmos, newDatabase } = await fileFixture({ args: ["--disable-purger"] });

// --- Cosmos DB semantics, computed independently of the server ---

const UNDEF = Symbol("undefined");

/** The value at a property path, or UNDEF. */
function get(v, ...path) {
  for (const p of path) {
    if (v === null || typeof v !== "object" || Array.isArray(v) || !Object.hasOwn(v, p)) return UNDEF;
    v = v[p];
  }
  return v;
}

/** An object from name, value pairs, leaving out undefined members. */
function obj(...kv) {
  const o = {};
  for (let i = 0; i + 1 < kv.length; i += 2) if (kv[i + 1] !== UNDEF) o[kv[i]] = kv[i + 1];
  return o;
}

const typeRank = (v) =>
  v === UNDEF ? 0 : v === null ? 1 : typeof v === "boolean" ? 2 : typeof v === "number" ? 3 : typeof v === "string" ? 4 : Array.isArray(v) ? 5 : 6;

/** ORDER BY order: undefined < null < booleans < numbers < strings; strings by code point. */
function cosmosCompare(a, b) {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 2 || ra === 3) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === 4) {
    // code point order (JS < compares UTF-16 units; the dataset is BMP-only)
    return a < b ? -1 : a > b ? 1 : 0;
  }
  return 0;
}

/** Comparison with Cosmos DB semantics: undefined across types. */
function cmp(a, b, op) {
  const r = typeRank(a);
  if (r !== typeRank(b) || r === 0 || r > 4) return UNDEF;
  const c = cosmosCompare(a, b);
  return { "=": c === 0, "!=": c !== 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0 }[op];
}

const and3 = (a, b) => (a === false || b === false ? false : a === true && b === true ? true : UNDEF);
const or3 = (a, b) => (a === true || b === true ? true : a === false && b === false ? false : UNDEF);
const not3 = (a) => (typeof a === "boolean" ? !a : UNDEF);
const isTrue = (v) => v === true;

const asc = (...path) => ({ key: (d) => get(d, ...path), desc: false });
const desc = (...path) => ({ key: (d) => get(d, ...path), desc: true });

/** Stable sort by keys (ties keep insertion order, in both directions). */
function orderBy(docs, ...keys) {
  return docs.slice().sort((x, y) => {
    for (const k of keys) {
      let c = cosmosCompare(k.key(x), k.key(y));
      if (k.desc) c = -c;
      if (c !== 0) return c;
    }
    return 0;
  });
}

/** JSON with sorted object keys, for comparisons. */
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

const rowsOf = (docs, f) => docs.map(f).filter((v) => v !== UNDEF);
const ids = (docs) => docs.map((d) => d.id);
const distinct = (rows) => {
  const seen = new Set();
  return rows.filter((r) => (seen.has(canon(r)) ? false : seen.add(canon(r))));
};
function groupRows(docs, key) {
  const groups = new Map();
  for (const d of docs) {
    const k = key(d);
    const ks = k === UNDEF ? "undefined" : canon(k);
    if (!groups.has(ks)) groups.set(ks, { key: k, docs: [] });
    groups.get(ks).docs.push(d);
  }
  return [...groups.values()];
}
function sumOf(docs, ...path) {
  let s = 0;
  for (const d of docs) {
    const v = get(d, ...path);
    if (v === UNDEF) continue;
    if (typeof v !== "number") return UNDEF;
    s += v;
  }
  return s;
}
function avgOf(docs, ...path) {
  let s = 0;
  let n = 0;
  for (const d of docs) {
    const v = get(d, ...path);
    if (v === UNDEF) continue;
    if (typeof v !== "number") return UNDEF;
    s += v;
    n++;
  }
  return n ? s / n : UNDEF;
}
function extremeOf(docs, max, ...path) {
  let best = UNDEF;
  for (const d of docs) {
    const v = get(d, ...path);
    if (v === UNDEF) continue;
    if (best === UNDEF || (max ? cosmosCompare(v, best) > 0 : cosmosCompare(v, best) < 0)) best = v;
  }
  return best;
}
const countDefined = (docs, ...path) => docs.filter((d) => get(d, ...path) !== UNDEF).length;
const tagsOf = (d) => (Array.isArray(d.tags) ? d.tags : []);
const cosmosDate = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, ".0000000Z");
const like = (s, re) => re.test(s);

function sameRows(got, want, unordered) {
  const g = got.map(canon);
  const w = want.map(canon);
  if (unordered) {
    g.sort();
    w.sort();
  }
  return g.length === w.length && g.every((x, i) => x === w[i]);
}

function assertRows(got, want, unordered, msg) {
  if (!sameRows(got, want, unordered)) {
    assert.fail(`${msg}\n got  ${got.map(canon).join("\n      ")}\n want ${want.map(canon).join("\n      ")}`);
  }
}

// --- the dataset (the same as the Go suite's query_cases_test.go) ---

const NAMES = [
  "alpha", "Beta", "gamma", "a_c", "abc", "a%c", "delta", "Epsilon", "zeta", "eta", "theta", "iota",
  "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
];
const N = 24;

function dataset() {
  const out = [];
  for (let i = 0; i < N; i++) {
    const d = {
      id: `d${String(i).padStart(2, "0")}`,
      pk: `p${i % 4}`,
      kind: "doc",
      bits: i,
      name: NAMES[i],
      price: i * 1.25,
      date: `2024-01-${String(i + 1).padStart(2, "0")}T10:00:00.0000000Z`,
    };
    if (i === 5) d.n = "5";
    else if (i === 17) d.n = null;
    else if (i === 20) d.n = 2.5;
    else if (i !== 11) d.n = i % 7;
    if (i !== 22) d.tags = [["red", "blue"], ["green"], []][i % 3];
    if (i % 2 === 0) d.nested = { a: { b: i * 10 } };
    if (i % 5 === 0) d["odd-key x"] = i;
    const f = Math.floor(i / 2) % 4;
    if (f === 0) d.flag = true;
    else if (f === 1) d.flag = false;
    else if (f === 2) d.flag = null;
    if (i % 8 !== 7) d.g = ["x", "y", "z"][i % 3];
    out.push(d);
  }
  return out;
}

const where = (docs, p) => docs.filter(p);
const bitsLt = (n) => (d) => d.bits < n;

/** The query table: expected rows as a function of the documents. */
const CASES = [
  // SELECT forms
  { name: "select star", query: "SELECT * FROM c", star: true, shape: true, want: (D) => D },
  {
    name: "projection with aliases",
    query: 'SELECT c.id, c.n AS num, c.nested.a.b AS deep, c["odd-key x"] AS odd FROM c',
    want: (D) => D.map((d) => obj("id", d.id, "num", get(d, "n"), "deep", get(d, "nested", "a", "b"), "odd", get(d, "odd-key x"))),
  },
  { name: "value", query: "SELECT VALUE c.name FROM c", want: (D) => D.map((d) => d.name) },
  { name: "value of undefined is no row", query: "SELECT VALUE c.nested.a.b FROM c", want: (D) => rowsOf(D, (d) => get(d, "nested", "a", "b")) },
  { name: "top", query: "SELECT TOP 4 c.id, c.bits FROM c", shape: true, want: (D) => D.slice(0, 4).map((d) => obj("id", d.id, "bits", d.bits)) },
  { name: "top with order by", query: "SELECT TOP 5 VALUE c.id FROM c ORDER BY c.name DESC", shape: true, want: (D) => ids(orderBy(D, desc("name"))).slice(0, 5) },
  { name: "distinct value", query: "SELECT DISTINCT VALUE c.g FROM c", unordered: true, shape: true, want: (D) => distinct(rowsOf(D, (d) => get(d, "g"))) },
  {
    name: "distinct objects",
    query: "SELECT DISTINCT c.g, c.flag FROM c",
    unordered: true,
    shape: true,
    want: (D) => distinct(D.map((d) => obj("g", get(d, "g"), "flag", get(d, "flag")))),
  },
  {
    name: "distinct with order by",
    query: "SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n DESC",
    shape: true,
    want: (D) => distinct(rowsOf(orderBy(D, desc("n")), (d) => get(d, "n"))),
  },
  {
    name: "object and array construction",
    query: 'SELECT VALUE {"id": c.id, "pair": [c.pk, c.bits], "sub": {"deep": c.nested.a.b, "k": "const"}} FROM c WHERE c.bits < 6',
    want: (D) => where(D, bitsLt(6)).map((d) => obj("id", d.id, "pair", [d.pk, d.bits], "sub", obj("deep", get(d, "nested", "a", "b"), "k", "const"))),
  },
  { name: "from alias", query: "SELECT VALUE r.id FROM root r WHERE r.bits >= 20", want: (D) => ids(where(D, (d) => d.bits >= 20)) },
  { name: "from a path", query: "SELECT VALUE x.b FROM c.nested.a x", want: (D) => rowsOf(D, (d) => get(d, "nested", "a", "b")) },
  { name: "in iteration", query: "SELECT VALUE t FROM t IN c.tags", want: (D) => D.flatMap(tagsOf) },
  {
    name: "join",
    query: "SELECT c.id, t AS tag FROM c JOIN t IN c.tags WHERE t != 'blue'",
    shape: true,
    want: (D) => D.flatMap((d) => tagsOf(d).filter((t) => t !== "blue").map((t) => ({ id: d.id, tag: t }))),
  },
  {
    name: "join with order by",
    query: "SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags ORDER BY c.bits DESC",
    shape: true,
    want: (D) => orderBy(D, desc("bits")).flatMap((d) => tagsOf(d).map((t) => [d.id, t])),
  },
  // WHERE: every operator family
  {
    name: "arithmetic",
    query: "SELECT VALUE [c.bits * 3, c.bits / 2, c.bits % 4, -c.bits, c.price - 0.5] FROM c WHERE c.bits * 2 + 1 = 15 OR c.bits % 5 = 4 OR c.bits / 4 = 5 OR c.bits - 1 = -1",
    want: (D) =>
      where(D, (d) => d.bits * 2 + 1 === 15 || d.bits % 5 === 4 || d.bits / 4 === 5 || d.bits - 1 === -1).map((d) => [
        d.bits * 3,
        d.bits / 2,
        d.bits % 4,
        0 - d.bits,
        d.price - 0.5,
      ]),
  },
  { name: "comparison skips other types", query: "SELECT VALUE c.id FROM c WHERE c.n > 3", want: (D) => ids(where(D, (d) => isTrue(cmp(get(d, "n"), 3, ">")))) },
  {
    name: "comparisons across types are undefined",
    query: "SELECT c.id, c.n < 3 AS lt, c.n = null AS isnull, c.n >= '0' AS strcmp, c.n != 3 AS ne FROM c",
    want: (D) =>
      D.map((d) => {
        const n = get(d, "n");
        return obj("id", d.id, "lt", cmp(n, 3, "<"), "isnull", cmp(n, null, "="), "strcmp", cmp(n, "0", ">="), "ne", cmp(n, 3, "!="));
      }),
  },
  {
    name: "three-valued logic",
    query: "SELECT c.id, (c.flag AND true) AS a, (c.flag OR false) AS o, (NOT c.flag) AS n, (c.flag AND false) AS af, (c.flag OR true) AS ot FROM c WHERE c.bits < 8",
    want: (D) =>
      where(D, bitsLt(8)).map((d) => {
        const f = get(d, "flag");
        return obj("id", d.id, "a", and3(f, true), "o", or3(f, false), "n", not3(f), "af", and3(f, false), "ot", or3(f, true));
      }),
  },
  {
    name: "not of undefined",
    query: "SELECT VALUE c.id FROM c WHERE NOT (c.n > 3) OR c.flag AND NOT c.flag",
    want: (D) => ids(where(D, (d) => isTrue(or3(not3(cmp(get(d, "n"), 3, ">")), and3(get(d, "flag"), not3(get(d, "flag"))))))),
  },
  {
    name: "in and not in",
    query: "SELECT VALUE c.id FROM c WHERE c.name IN ('alpha', 'zeta', 'nope') OR (c.bits NOT IN (1, 2, 3) AND c.bits < 6)",
    want: (D) => ids(where(D, (d) => ["alpha", "zeta"].includes(d.name) || (d.bits < 6 && ![1, 2, 3].includes(d.bits)))),
  },
  {
    name: "between",
    query: "SELECT VALUE c.id FROM c WHERE c.bits BETWEEN 5 AND 8 OR c.n BETWEEN 2.5 AND 3",
    want: (D) => ids(where(D, (d) => (d.bits >= 5 && d.bits <= 8) || (typeof d.n === "number" && d.n >= 2.5 && d.n <= 3))),
  },
  {
    name: "like",
    query: "SELECT VALUE c.name FROM c WHERE c.name LIKE 'a_c' OR c.name LIKE '%ta' OR c.name NOT LIKE '%a%'",
    want: (D) => where(D, (d) => like(d.name, /^a.c$/s) || d.name.endsWith("ta") || !d.name.includes("a")).map((d) => d.name),
  },
  {
    name: "like with escape",
    query: "SELECT VALUE c.name FROM c WHERE c.name LIKE 'a!_c' ESCAPE '!' OR c.name LIKE '%!%%' ESCAPE '!'",
    want: (D) => where(D, (d) => d.name === "a_c" || d.name.includes("%")).map((d) => d.name),
  },
  { name: "coalesce", query: "SELECT VALUE c.n ?? 'none' FROM c", want: (D) => D.map((d) => (get(d, "n") === UNDEF ? "none" : d.n)) },
  {
    name: "ternary",
    query: "SELECT VALUE (c.bits > 10 ? 'big' : (c.bits > 5 ? 'mid' : 'small')) FROM c",
    want: (D) => D.map((d) => (d.bits > 10 ? "big" : d.bits > 5 ? "mid" : "small")),
  },
  {
    name: "string concatenation",
    query: "SELECT c.id, c.id || '-' || c.pk AS joined, c.id || c.bits AS bad FROM c",
    want: (D) => D.map((d) => ({ id: d.id, joined: `${d.id}-${d.pk}` })),
  },
  {
    name: "bitwise",
    query: "SELECT VALUE [c.bits & 6, c.bits | 8, c.bits ^ 5, ~c.bits, c.bits << 2, c.bits >> 1, c.bits >>> 1] FROM c WHERE (c.bits & 1) = 1",
    want: (D) => where(D, (d) => (d.bits & 1) === 1).map((d) => [d.bits & 6, d.bits | 8, d.bits ^ 5, ~d.bits, d.bits << 2, d.bits >> 1, d.bits >>> 1]),
  },
  {
    name: "quoted and nested paths in where",
    query: 'SELECT VALUE c.id FROM c WHERE c["odd-key x"] = 10 OR c.nested.a.b = 40 OR c.nested["a"]["b"] = 160',
    want: (D) => ids(where(D, (d) => get(d, "odd-key x") === 10 || [40, 160].includes(get(d, "nested", "a", "b")))),
  },
  {
    name: "property access",
    query: 'SELECT c["id"] AS id, c.nested["a"]["b"] AS deep, c.tags[0] AS first, c["odd-key x"] AS odd FROM c',
    want: (D) =>
      D.map((d) => obj("id", d.id, "deep", get(d, "nested", "a", "b"), "first", tagsOf(d).length ? tagsOf(d)[0] : UNDEF, "odd", get(d, "odd-key x"))),
  },
  // ORDER BY
  { name: "order by one key", query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC", shape: true, want: (D) => ids(orderBy(D, desc("bits"))) },
  {
    name: "order by several keys with ties",
    query: "SELECT c.id, c.flag, c.pk FROM c ORDER BY c.flag DESC, c.pk ASC",
    shape: true,
    want: (D) => orderBy(D, desc("flag"), asc("pk")).map((d) => obj("id", d.id, "flag", get(d, "flag"), "pk", d.pk)),
  },
  { name: "order by mixed types", query: "SELECT c.id, c.n FROM c ORDER BY c.n", shape: true, want: (D) => orderBy(D, asc("n")).map((d) => obj("id", d.id, "n", get(d, "n"))) },
  { name: "order by strings", query: "SELECT VALUE c.name FROM c ORDER BY c.name", want: (D) => orderBy(D, asc("name")).map((d) => d.name) },
  // GROUP BY and aggregates
  {
    name: "group by with aggregates",
    query: "SELECT c.g, COUNT(1) AS cnt, SUM(c.bits) AS total, AVG(c.bits) AS mean, MIN(c.bits) AS lo, MAX(c.name) AS hi, SUM(c.n) AS sn FROM c GROUP BY c.g",
    unordered: true,
    shape: true,
    want: (D) =>
      groupRows(D, (d) => get(d, "g")).map(({ key, docs: g }) =>
        obj("g", key, "cnt", g.length, "total", sumOf(g, "bits"), "mean", avgOf(g, "bits"), "lo", extremeOf(g, false, "bits"), "hi", extremeOf(g, true, "name"), "sn", sumOf(g, "n")),
      ),
  },
  {
    name: "group by two keys with where",
    query: "SELECT c.pk, c.g, COUNT(1) AS n FROM c WHERE c.bits > 3 GROUP BY c.pk, c.g",
    unordered: true,
    want: (D) => groupRows(where(D, (d) => d.bits > 3), (d) => [d.pk, get(d, "g") === UNDEF ? { undef: 1 } : d.g]).map(({ docs: g }) => obj("pk", g[0].pk, "g", get(g[0], "g"), "n", g.length)),
  },
  { name: "value count", query: "SELECT VALUE COUNT(1) FROM c", shape: true, want: (D) => [D.length] },
  {
    name: "aggregates",
    query: "SELECT COUNT(1) AS c1, COUNT(c.n) AS cn, SUM(c.bits) AS s, AVG(c.price) AS a, MIN(c.name) AS mn, MAX(c.bits) AS mx, SUM(c.n) AS sn, MIN(c.n) AS nmin, MAX(c.n) AS nmax FROM c",
    shape: true,
    want: (D) => [
      obj("c1", D.length, "cn", countDefined(D, "n"), "s", sumOf(D, "bits"), "a", avgOf(D, "price"), "mn", extremeOf(D, false, "name"), "mx", extremeOf(D, true, "bits"), "sn", sumOf(D, "n"), "nmin", extremeOf(D, false, "n"), "nmax", extremeOf(D, true, "n")),
    ],
  },
  {
    name: "aggregates with where",
    query: "SELECT COUNT(1) AS n, SUM(c.price) AS s, MAX(c.id) AS m FROM c WHERE c.flag = true",
    want: (D) => {
      const f = where(D, (d) => d.flag === true);
      return [obj("n", f.length, "s", sumOf(f, "price"), "m", extremeOf(f, true, "id"))];
    },
  },
  // OFFSET LIMIT
  { name: "offset limit", query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC OFFSET 5 LIMIT 7", shape: true, want: (D) => ids(orderBy(D, desc("bits"))).slice(5, 12) },
  { name: "offset limit past the end", query: "SELECT c.id FROM c OFFSET 20 LIMIT 10", shape: true, want: (D) => D.slice(20).map((d) => ({ id: d.id })) },
  // subqueries
  {
    name: "exists",
    query: "SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'green')",
    want: (D) => ids(where(D, (d) => tagsOf(d).includes("green"))),
  },
  {
    name: "array subquery",
    query: "SELECT c.id, ARRAY(SELECT VALUE UPPER(t) FROM t IN c.tags) AS up FROM c WHERE c.bits < 6",
    want: (D) => where(D, bitsLt(6)).map((d) => ({ id: d.id, up: tagsOf(d).map((t) => t.toUpperCase()) })),
  },
  {
    name: "scalar subquery",
    query: "SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags) AS nt FROM c WHERE (SELECT VALUE COUNT(1) FROM t IN c.tags) != 1",
    want: (D) => where(D, (d) => tagsOf(d).length !== 1).map((d) => ({ id: d.id, nt: tagsOf(d).length })),
  },
  // parameters
  {
    name: "string number and array parameters",
    query: "SELECT VALUE c.id FROM c WHERE c.name = @name OR c.bits > @min OR ARRAY_CONTAINS(@ids, c.id)",
    parameters: [
      { name: "@name", value: "gamma" },
      { name: "@min", value: 21 },
      { name: "@ids", value: ["d01", "d04"] },
    ],
    want: (D) => ids(where(D, (d) => d.name === "gamma" || d.bits > 21 || ["d01", "d04"].includes(d.id))),
  },
  {
    name: "top and offset limit parameters",
    query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC OFFSET @o LIMIT @l",
    parameters: [
      { name: "@o", value: 2 },
      { name: "@l", value: 3 },
    ],
    want: (D) => ids(orderBy(D, desc("bits"))).slice(2, 5),
  },
  {
    name: "top parameter and null parameter",
    query: "SELECT TOP @n VALUE c.id FROM c WHERE c.n = @v OR c.flag = @v",
    parameters: [
      { name: "@n", value: 3 },
      { name: "@v", value: null },
    ],
    want: (D) => ids(where(D, (d) => get(d, "n") === null || get(d, "flag") === null)).slice(0, 3),
  },
  {
    name: "object parameter",
    query: 'SELECT VALUE {"id": c.id, "label": @obj.label, "hit": c.bits = @obj.bits, "all": @obj} FROM c WHERE c.bits IN (@obj.bits, 1)',
    parameters: [{ name: "@obj", value: { label: "L", bits: 3, list: [1, 2] } }],
    want: (D) => where(D, (d) => d.bits === 3 || d.bits === 1).map((d) => ({ id: d.id, label: "L", hit: d.bits === 3, all: { label: "L", bits: 3, list: [1, 2] } })),
  },
  // built-in functions
  {
    name: "string functions",
    query:
      "SELECT VALUE [UPPER(c.name), LOWER(c.name), LENGTH(c.name), SUBSTRING(c.name, 1, 2), CONTAINS(c.name, 'a'), STARTSWITH(c.name, 'a'), ENDSWITH(c.name, 'a'), CONCAT(c.id, '/', c.pk), REPLACE(c.name, 'a', 'A'), INDEX_OF(c.name, 'a'), LEFT(c.name, 2), RIGHT(c.name, 2), TRIM('  y  '), REVERSE(c.name), StringEquals(c.name, 'BETA', true)] FROM c WHERE c.bits < 6",
    want: (D) =>
      where(D, bitsLt(6)).map((d) => {
        const s = d.name;
        return [s.toUpperCase(), s.toLowerCase(), s.length, s.substring(1, 3), s.includes("a"), s.startsWith("a"), s.endsWith("a"), `${d.id}/${d.pk}`, s.replaceAll("a", "A"), s.indexOf("a"), s.slice(0, 2), s.slice(-2), "y", [...s].reverse().join(""), s.toLowerCase() === "beta"];
      }),
  },
  {
    name: "math functions",
    query: "SELECT VALUE [ABS(-c.bits), CEILING(c.price), FLOOR(c.price), ROUND(c.price), TRUNC(c.price), SQRT(c.bits), POWER(c.bits, 2), SIGN(c.bits - 5), PI()] FROM c WHERE c.bits < 9",
    want: (D) =>
      where(D, bitsLt(9)).map((d) => [d.bits, Math.ceil(d.price), Math.floor(d.price), Math.sign(d.price) * Math.round(Math.abs(d.price)), Math.trunc(d.price), Math.sqrt(d.bits), d.bits * d.bits, Math.sign(d.bits - 5), Math.PI]),
  },
  {
    name: "type checking functions",
    query: "SELECT c.id, IS_NUMBER(c.n) AS isn, IS_STRING(c.n) AS iss, IS_NULL(c.n) AS isnull, IS_DEFINED(c.n) AS isdef, IS_BOOL(c.flag) AS isb, IS_ARRAY(c.tags) AS isa, IS_OBJECT(c.nested) AS iso, IS_PRIMITIVE(c.n) AS isp FROM c",
    want: (D) =>
      D.map((d) => {
        const r = typeRank(get(d, "n"));
        return obj("id", d.id, "isn", r === 3, "iss", r === 4, "isnull", r === 1, "isdef", r !== 0, "isb", typeof get(d, "flag") === "boolean", "isa", Array.isArray(d.tags), "iso", typeRank(get(d, "nested")) === 6, "isp", r >= 1 && r <= 4);
      }),
  },
  {
    name: "array functions",
    query: 'SELECT VALUE {"len": ARRAY_LENGTH(c.tags), "red": ARRAY_CONTAINS(c.tags, \'red\'), "tail": ARRAY_SLICE(c.tags, 1), "cat": ARRAY_CONCAT(c.tags, [\'z\']), "partial": ARRAY_CONTAINS([{"a": c.bits, "b": 2}], {"a": c.bits}, true)} FROM c WHERE IS_ARRAY(c.tags)',
    want: (D) => where(D, (d) => Array.isArray(d.tags)).map((d) => ({ len: d.tags.length, red: d.tags.includes("red"), tail: d.tags.slice(1), cat: [...d.tags, "z"], partial: true })),
  },
  {
    name: "date and time functions",
    query: "SELECT VALUE [DateTimeAdd('dd', 1, c.date), DateTimePart('dd', c.date), DateTimeToTimestamp(c.date), DateTimeDiff('hh', c.date, DateTimeAdd('dd', 1, c.date)), DateTimeFromParts(2024, 1, c.bits + 1)] FROM c WHERE c.bits < 5",
    want: (D) =>
      where(D, bitsLt(5)).map((d) => {
        const ms = Date.parse(d.date);
        return [cosmosDate(ms + 86_400_000), new Date(ms).getUTCDate(), ms, 24, cosmosDate(Date.UTC(2024, 0, d.bits + 1))];
      }),
  },
  {
    name: "conversion functions",
    query: 'SELECT c.id, StringToNumber(c.n) AS sn, ToString(c.bits) AS s, StringToNumber("1.5e1") AS k FROM c WHERE c.bits < 8',
    want: (D) => where(D, bitsLt(8)).map((d) => obj("id", d.id, "sn", typeof d.n === "string" ? Number(d.n) : UNDEF, "s", String(d.bits), "k", 15)),
  },
];

// --- running queries ---

/** A query spec with its parameters. */
const spec = (qc) => (qc.parameters ? { query: qc.query, parameters: qc.parameters } : qc.query);

/**
 * Runs a query with fetchNext to the end, checking every page: requestCharge
 * > 0, x-ms-item-count equal to the page's rows, no more rows than
 * maxItemCount. Returns {rows, pages}.
 */
async function runPages(container, q, options = {}) {
  const it = container.items.query(q, options);
  const rows = [];
  const pages = [];
  while (it.hasMoreResults()) {
    const p = await it.fetchNext();
    assert.ok(p.requestCharge > 0, `requestCharge ${p.requestCharge} on a page of ${JSON.stringify(q)}`);
    assert.equal(Number(p.headers["x-ms-item-count"]), p.resources.length, "x-ms-item-count matches the page");
    if (options.maxItemCount > 0) assert.ok(p.resources.length <= options.maxItemCount, `a page of ${p.resources.length} > ${options.maxItemCount}`);
    rows.push(...p.resources);
    pages.push(p);
    assert.ok(pages.length < 1000, "the query does not end");
  }
  return { rows, pages };
}

const strip = (rows) =>
  rows.map((r) => {
    for (const p of ["_rid", "_self", "_etag", "_attachments", "_ts"]) assert.ok(Object.hasOwn(r, p), `SELECT * row ${r.id} without ${p}`);
    const { _rid, _self, _etag, _attachments, _ts, ...rest } = r;
    return rest;
  });

let db;
let multi;
let single;
let docs;
before(async () => {
  db = await newDatabase("query");
  ({ container: multi } = await db.containers.create({ id: uid("multi"), partitionKey: { paths: ["/pk"] } }));
  ({ container: single } = await db.containers.create({ id: uid("single"), partitionKey: { paths: ["/kind"] } }));
  docs = dataset();
  for (const d of docs) {
    await multi.items.create(d);
    await single.items.create(d);
  }
});

test("query table: cross-partition fetchAll gives the expected rows", async () => {
  for (const qc of CASES) {
    const r = await multi.items.query(spec(qc)).fetchAll();
    assert.ok(r.requestCharge > 0, `${qc.name}: requestCharge`);
    assertRows(qc.star ? strip(r.resources) : r.resources, qc.want(docs), qc.unordered, `${qc.name}: ${qc.query}`);
  }
});

test("query table: pages of 1, 2 and 5 give exactly the unpaged rows; a token resumes in a new iterator", async () => {
  for (const qc of CASES.filter((c) => c.shape)) {
    const { rows: unpaged } = await runPages(multi, spec(qc));
    for (const maxItemCount of [1, 2, 5]) {
      const { rows, pages } = await runPages(multi, spec(qc), { maxItemCount });
      assertRows(rows, unpaged, false, `${qc.name} paged by ${maxItemCount}`);
      assert.ok(pages.length <= Math.ceil(unpaged.length / maxItemCount) + 1, `${qc.name}: ${pages.length} pages of ${maxItemCount} for ${unpaged.length} rows`);
    }
    if (unpaged.length < 3) continue;
    const first = await multi.items.query(spec(qc), { maxItemCount: 2 }).fetchNext();
    assert.equal(typeof first.continuationToken, "string", `${qc.name}: a continuation after 2 of ${unpaged.length} rows`);
    const { rows: rest } = await runPages(multi, spec(qc), { maxItemCount: 3, continuationToken: first.continuationToken });
    assertRows([...first.resources, ...rest], unpaged, false, `${qc.name}: resumed with continuationToken`);
  }
});

test("query table: partitionKey scopes to one partition", async () => {
  for (const pk of ["p0", "p1", "p2", "p3"]) {
    const part = docs.filter((d) => d.pk === pk);
    for (const qc of CASES) {
      const { rows } = await runPages(multi, spec(qc), { partitionKey: pk });
      assertRows(qc.star ? strip(rows) : rows, qc.want(part), qc.unordered, `${qc.name} in ${pk}`);
    }
  }
  const { resources } = await multi.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "none" }).fetchAll();
  assert.deepEqual(resources, [0]);
});

test("query table: a container with one partition key value gives the same rows as four partitions", async () => {
  for (const qc of CASES) {
    const want = (await multi.items.query(spec(qc)).fetchAll()).resources;
    for (const options of [{}, { partitionKey: "doc" }]) {
      const got = (await single.items.query(spec(qc), options).fetchAll()).resources;
      assertRows(qc.star ? strip(got) : got, qc.star ? strip(want) : want, qc.unordered, `${qc.name} on one partition ${JSON.stringify(options)}`);
    }
  }
});

test("DocumentId and the current date and time", async () => {
  const { resources } = await multi.items.query("SELECT c.id, c._rid, DocumentId(c) AS did FROM c").fetchAll();
  for (const r of resources) {
    const b = Buffer.from(r._rid.replaceAll("-", "/"), "base64");
    assert.equal(b.length, 16);
    assert.equal(r.did, Number(b.readBigUInt64LE(8)), `DocumentId of ${r.id}`);
  }
  assert.equal(new Set(resources.map((r) => r.did)).size, N, "DocumentIds are distinct");

  const before = Date.now();
  const { resources: rows } = await multi.items.query("SELECT VALUE [GetCurrentDateTime(), GetCurrentTimestamp()] FROM c").fetchAll();
  const after = Date.now();
  assert.equal(rows.length, N);
  for (const r of rows) assert.deepEqual(r, rows[0], "one instant per request");
  const [dt, ts] = rows[0];
  assert.match(dt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/);
  assert.equal(Date.parse(dt), ts, "GetCurrentDateTime and GetCurrentTimestamp are the same instant");
  assert.ok(ts >= before - 1000 && ts <= after + 1000, `GetCurrentTimestamp ${ts} outside [${before}, ${after}]`);
});

test("GetCurrentTimestamp has millisecond precision: it lies within the request's own time span", async () => {
  // The server reads this machine's clock after the request was sent and
  // before the answer arrived. A timestamp cut to the whole second lies up to
  // 999 ms before the request was sent.
  const misses = [];
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    const { resources } = await multi.items.query("SELECT VALUE GetCurrentTimestamp() FROM c WHERE c.id = 'd00'").fetchAll();
    const after = Date.now();
    if (resources[0] < before || resources[0] > after) misses.push(`${resources[0]} not in [${before}, ${after}]`);
    await sleep(37);
  }
  assert.deepEqual(misses, [], "GetCurrentTimestamp() outside the request's time span");
});

test("errors: syntax errors name line:column and the problem; unsupported features; foreign continuation tokens", async () => {
  for (const [query, pos, problem] of [
    ["SELECT * FROM c WHERE", "1:22", /expected expression/],
    ["SELECT c.id\nFROM c\nWHERE c.bits >", "3:15", /expected expression/],
    ["SELECT c.id FROM c WHERE c.bits = = 1", "1:35", /expected expression/],
    ["SELECT VALUE FOO(c.id) FROM c", "1:14", /unknown function/],
  ]) {
    const err = await rejectsWithCode(() => multi.items.query(query).fetchAll(), 400);
    assert.ok(err.message.includes(pos), `${JSON.stringify(query)}: ${err.message} should name ${pos}`);
    assert.match(err.message, problem);
    await rejectsWithCode(() => multi.items.query(query, { partitionKey: "p1" }).fetchNext(), 400, new RegExp(pos));
  }
  for (const query of [
    'SELECT VALUE ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [0, 1]}) FROM c',
    "SELECT VALUE udf.tax(c.price) FROM c",
  ]) {
    await rejectsWithCode(() => multi.items.query(query).fetchAll(), 400);
  }
  await rejectsWithCode(() => multi.items.query("SELECT * FROM c WHERE c.id = @missing").fetchAll(), 400);

  const first = await multi.items.query({ query: "SELECT VALUE c.id FROM c WHERE c.bits > @b", parameters: [{ name: "@b", value: 1 }] }, { maxItemCount: 2 }).fetchNext();
  const continuationToken = first.continuationToken;
  assert.equal(typeof continuationToken, "string");
  await rejectsWithCode(() => multi.items.query("SELECT VALUE c.name FROM c", { maxItemCount: 2, continuationToken }).fetchNext(), 400);
  await rejectsWithCode(
    () => multi.items.query({ query: "SELECT VALUE c.id FROM c WHERE c.bits > @b", parameters: [{ name: "@b", value: 2 }] }, { maxItemCount: 2, continuationToken }).fetchNext(),
    400,
  );
  await rejectsWithCode(
    () => single.items.query({ query: "SELECT VALUE c.id FROM c WHERE c.bits > @b", parameters: [{ name: "@b", value: 1 }] }, { maxItemCount: 2, continuationToken }).fetchNext(),
    400,
  );
  const ok = await multi.items.query({ query: "SELECT VALUE c.id FROM c WHERE c.bits > @b", parameters: [{ name: "@b", value: 1 }] }, { maxItemCount: 2, continuationToken }).fetchNext();
  assert.deepEqual(ok.resources, ["d04", "d05"]);
});

const isPlanRequest = (e) => e.method === "POST" && e.reqHeaders["x-ms-cosmos-is-query-plan-request"] !== undefined;

test("on the wire: one trivial plan request, then the server's rows as they are; forceQueryPlan runs the query on range 0", async () => {
  const proxy = await startProxy(srv.endpoint);
  const pc = client(proxy.endpoint);
  try {
    const container = pc.database(db.id).container(multi.id);
    const qc = CASES.find((c) => c.name === "group by with aggregates");
    const { resources } = await container.items.query(qc.query).fetchAll();
    assertRows(resources, qc.want(docs), true, "group by through the proxy");
    // The SDK sends the plan request beside the query and, when the query
    // succeeds, returns without waiting for it: it may be logged only now.
    await proxy.waitFor(isPlanRequest, "query plan request");
    await proxy.idle();
    const posts = proxy.log.filter((e) => e.method === "POST" && e.path.endsWith("/docs"));
    const plans = posts.filter(isPlanRequest);
    const queries = posts.filter((e) => !isPlanRequest(e));
    assert.equal(plans.length, 1, "one plan request");
    assert.equal(plans[0].status, 200);
    const plan = JSON.parse(plans[0].resBody);
    assert.deepEqual(plan.queryInfo.aggregates, [], "the plan asks for no client-side work");
    assert.deepEqual(plan.queryInfo.groupByExpressions, []);
    assert.equal(queries.length, 1);
    assert.equal(JSON.parse(queries[0].reqBody).query, qc.query, "the query is sent unchanged");
    assert.equal(queries[0].reqHeaders["x-ms-documentdb-query-enablecrosspartition"], "true");
    assert.equal(queries[0].reqHeaders["x-ms-documentdb-partitionkey"], undefined, "no pk header cross-partition");
    assertRows(resources, JSON.parse(queries[0].resBody).Documents, false, "the SDK returns the server's rows unchanged");

    proxy.log.length = 0;
    for (const name of ["order by several keys with ties", "group by with aggregates", "distinct value", "aggregates", "offset limit"]) {
      const c = CASES.find((x) => x.name === name);
      const { resources: forced } = await container.items.query(c.query, { forceQueryPlan: true }).fetchAll();
      assertRows(forced, c.want(docs), c.unordered, `${name} with forceQueryPlan`);
      const { resources: forcedPaged } = await container.items.query(c.query, { forceQueryPlan: true, maxItemCount: 2 }).fetchAll();
      assertRows(forcedPaged, forced, false, `${name} with forceQueryPlan, pages of 2`);
    }
    const ranged = proxy.log.filter((e) => e.method === "POST" && e.path.endsWith("/docs") && !e.reqHeaders["x-ms-cosmos-is-query-plan-request"]);
    assert.ok(ranged.length >= 5);
    for (const e of ranged) assert.equal(e.reqHeaders["x-ms-documentdb-partitionkeyrangeid"], "0", "forceQueryPlan queries range 0");
  } finally {
    pc.dispose();
    await proxy.close();
  }
});

test("databases, containers and offers queries", async () => {
  const prefix = uid("qdb");
  for (const s of ["2", "3", "1"]) await cosmos.databases.create({ id: `${prefix}-${s}` });
  const { resources: dbs, requestCharge } = await cosmos.databases
    .query({ query: "SELECT VALUE d.id FROM d WHERE STARTSWITH(d.id, @p) ORDER BY d.id DESC", parameters: [{ name: "@p", value: prefix }] })
    .fetchAll();
  assert.deepEqual(dbs, [`${prefix}-3`, `${prefix}-2`, `${prefix}-1`]);
  assert.ok(requestCharge > 0);
  const it = cosmos.databases.query({ query: "SELECT * FROM d WHERE STARTSWITH(d.id, @p)", parameters: [{ name: "@p", value: prefix }] }, { maxItemCount: 1 });
  const paged = [];
  while (it.hasMoreResults()) {
    const p = await it.fetchNext();
    assert.ok(p.resources.length <= 1);
    paged.push(...p.resources.map((d) => d.id));
  }
  assert.deepEqual(paged.sort(), [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`]);

  const { resources: colls } = await db.containers.query("SELECT * FROM c WHERE c.partitionKey.paths[0] = '/kind'").fetchAll();
  assert.deepEqual(colls.map((c) => c.id), [single.id]);
  const { resources: count } = await db.containers.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
  assert.ok(count[0] >= 2);
  await rejectsWithCode(() => cosmos.databases.query("SELECT * FROM d WHERE").fetchAll(), 400, /1:22/);

  // Lethe provisions no throughput: the offers query the SDK uses finds
  // nothing, as for a container without its own throughput.
  const { resource: def } = await multi.read();
  const { resources: offers } = await cosmos.offers.query({ query: "SELECT * FROM root r WHERE r.resource = @self", parameters: [{ name: "@self", value: def._self }] }).fetchAll();
  assert.deepEqual(offers, []);
  const { resource: offer } = await multi.readOffer();
  assert.equal(offer, undefined);
});

test("hierarchical partition keys: a prefix scopes the query", async () => {
  const { container } = await db.containers.create({ id: uid("hier"), partitionKey: { paths: ["/tenant", "/user"], kind: "MultiHash", version: 2 } });
  const hdocs = [];
  let i = 0;
  for (const tenant of ["a", "ab", "b"]) {
    for (const user of ["u1", "u2"]) {
      for (let k = 0; k < 2; k++) {
        const d = { id: `h${String(i).padStart(2, "0")}`, tenant, user, v: (i * 7) % 12 };
        await container.items.create(d);
        hdocs.push(d);
        i++;
      }
    }
  }
  const queries = [
    ["SELECT VALUE c.id FROM c", (D) => ids(D)],
    ["SELECT VALUE c.id FROM c ORDER BY c.v DESC", (D) => ids(orderBy(D, desc("v")))],
    ["SELECT VALUE COUNT(1) FROM c", (D) => [D.length]],
    ["SELECT VALUE SUM(c.v) FROM c WHERE c.user = 'u1'", (D) => [sumOf(D.filter((d) => d.user === "u1"), "v")]],
  ];
  for (const [partitionKey, keep] of [
    [undefined, () => true],
    [["a"], (d) => d.tenant === "a"],
    [["ab"], (d) => d.tenant === "ab"],
    [["b", "u2"], (d) => d.tenant === "b" && d.user === "u2"],
    [["c"], () => false],
  ]) {
    for (const [query, want] of queries) {
      const { rows } = await runPages(container, query, partitionKey ? { partitionKey, maxItemCount: 3 } : { maxItemCount: 3 });
      assertRows(rows, want(hdocs.filter(keep)), false, `${query} with partitionKey ${JSON.stringify(partitionKey)}`);
    }
  }
});

test("TTL: expired documents never appear in results, COUNT, SUM, GROUP BY, DISTINCT or ORDER BY", async () => {
  const { container } = await db.containers.create({ id: uid("ttl"), partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
  const all = [];
  let maxTs = 0;
  for (let i = 0; i < 12; i++) {
    const short = i % 2 === 0;
    const d = { id: `${short ? "s" : "l"}${String(i).padStart(2, "0")}`, pk: ["a", "b"][i % 2 ^ (i >> 2) % 2], v: i, g: short && i % 4 === 0 ? "short-only" : "shared", tags: [`t${i % 3}`] };
    if (short) d.ttl = 1;
    const { resource } = await container.items.create(d);
    maxTs = Math.max(maxTs, resource._ts);
    all.push(d);
  }
  const live = all.filter((d) => d.ttl === undefined);
  const checks = [
    ["SELECT VALUE c.id FROM c", (D) => ids(D), false],
    ["SELECT VALUE COUNT(1) FROM c", (D) => [D.length], false],
    ["SELECT VALUE SUM(c.v) FROM c", (D) => [sumOf(D, "v")], false],
    ["SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", (D) => groupRows(D, (d) => d.g).map(({ key, docs: g }) => ({ g: key, n: g.length })), true],
    ["SELECT DISTINCT VALUE c.g FROM c", (D) => distinct(D.map((d) => d.g)), true],
    ["SELECT VALUE c.id FROM c ORDER BY c.v DESC", (D) => ids(orderBy(D, desc("v"))), false],
    ["SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags", (D) => D.flatMap((d) => d.tags.map((t) => [d.id, t])), false],
    ["SELECT VALUE c.id FROM c WHERE c.g = 'short-only'", (D) => ids(D.filter((d) => d.g === "short-only")), false],
    ["SELECT VALUE c.id FROM c WHERE c.v >= 2 AND c.v < 9", (D) => ids(D.filter((d) => d.v >= 2 && d.v < 9)), false],
  ];
  await sleepUntil((maxTs + 1) * 1000 + 150);
  for (const [query, want, unordered] of checks) {
    for (const options of [{}, { maxItemCount: 2 }, { partitionKey: "a" }]) {
      const { rows } = await runPages(container, query, options);
      const D = options.partitionKey ? live.filter((d) => d.pk === options.partitionKey) : live;
      assertRows(rows, want(D), unordered, `${query} ${JSON.stringify(options)} after expiry`);
    }
  }
});

test("TTL: changing defaultTtl never makes a query miss a live document or return an expired one", async () => {
  const { container, resource: def0 } = await db.containers.create({ id: uid("ttlchg"), partitionKey: { paths: ["/pk"] } });
  let maxTs = 0;
  const all = [];
  for (let i = 0; i < 6; i++) {
    const d = { id: `c${i}`, pk: ["a", "b"][i % 2], v: i, kind: "doc" };
    if (i === 3) d.ttl = 1; // ignored while TTL is off
    if (i >= 4) d.ttl = -1;
    const { resource } = await container.items.create(d);
    maxTs = Math.max(maxTs, resource._ts);
    all.push(d);
  }
  const setTtl = async (defaultTtl) => {
    const { defaultTtl: _old, ...rest } = def0;
    await container.replace(defaultTtl === undefined ? rest : { ...rest, defaultTtl });
  };
  const expect = async (idsWanted, what) => {
    for (const [query, want] of [
      ["SELECT VALUE c.id FROM c", idsWanted],
      ["SELECT VALUE c.id FROM c WHERE c.kind = 'doc' ORDER BY c.v", idsWanted],
      ["SELECT VALUE COUNT(1) FROM c", [idsWanted.length]],
      ["SELECT VALUE c.id FROM c WHERE c.v >= 0", idsWanted],
    ]) {
      const { rows } = await runPages(container, query, { maxItemCount: 2 });
      assert.deepEqual(rows, want, `${what}: ${query}`);
    }
  };
  await sleepUntil((maxTs + 1) * 1000 + 150);
  await expect(["c0", "c1", "c2", "c3", "c4", "c5"], "TTL off, own ttl passed");
  await setTtl(-1);
  await expect(["c0", "c1", "c2", "c4", "c5"], "defaultTtl -1: the own ttl applies at once");
  await setTtl(1);
  await expect(["c4", "c5"], "defaultTtl 1: documents without ttl are expired");
  await setTtl(undefined);
  await expect(["c4", "c5"], "TTL off again: expiry is final");
  await setTtl(3600);
  await expect(["c4", "c5"], "defaultTtl 3600");
});

test("indexes: populateIndexMetrics names the index; excluded paths still answer exactly; a replaced policy stays exact", async () => {
  const { container: indexed } = await db.containers.create({ id: uid("idx"), partitionKey: { paths: ["/pk"] } });
  const nameOnly = { indexingMode: "consistent", automatic: true, includedPaths: [{ path: "/name/?" }], excludedPaths: [{ path: "/*" }] };
  const { container: scanned } = await db.containers.create({ id: uid("scan"), partitionKey: { paths: ["/pk"] }, indexingPolicy: nameOnly });
  const idocs = [];
  for (let i = 0; i < 40; i++) {
    const d = { id: `i${String(i).padStart(2, "0")}`, pk: `p${i % 3}`, name: `n${i % 5}`, v: i % 2 === 0 ? i % 7 : String(i % 7) };
    await indexed.items.create(d);
    await scanned.items.create(d);
    idocs.push(d);
  }
  const r = await indexed.items.query("SELECT * FROM c WHERE c.name = 'n3'", { populateIndexMetrics: true }).fetchNext();
  assert.equal(r.resources.length, 8);
  const metrics = JSON.parse(r.indexMetrics);
  const used = (m) => (m.UtilizedIndexes?.SingleIndexes ?? []).map((x) => x.IndexSpec);
  assert.ok(used(metrics).includes("/name/?"), `indexMetrics ${r.indexMetrics} should name /name/?`);
  const r2 = await scanned.items.query("SELECT * FROM c WHERE c.v = 3", { populateIndexMetrics: true }).fetchNext();
  assert.deepEqual(used(JSON.parse(r2.indexMetrics)), [], `no index serves an excluded path: ${r2.indexMetrics}`);
  const r3 = await indexed.items.query("SELECT * FROM c WHERE c.name = 'n3'").fetchNext();
  assert.equal(r3.headers["x-ms-cosmos-index-utilization"], undefined, "no index metrics unless asked");

  const queries = [
    ["SELECT VALUE c.id FROM c WHERE c.v = 3", (D) => ids(D.filter((d) => d.v === 3))],
    ["SELECT VALUE c.id FROM c WHERE c.v = '3'", (D) => ids(D.filter((d) => d.v === "3"))],
    ["SELECT VALUE c.id FROM c WHERE c.v > 2", (D) => ids(D.filter((d) => typeof d.v === "number" && d.v > 2))],
    ["SELECT VALUE c.id FROM c WHERE c.name IN ('n1', 'n4') AND c.v < '4'", (D) => ids(D.filter((d) => ["n1", "n4"].includes(d.name) && typeof d.v === "string" && d.v < "4"))],
    ["SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, '5') OR c.v = 5", (D) => ids(D.filter((d) => d.v === "5" || d.v === 5))],
    ["SELECT VALUE c.id FROM c ORDER BY c.v DESC", (D) => ids(orderBy(D, desc("v")))],
    ["SELECT VALUE COUNT(1) FROM c WHERE IS_DEFINED(c.v)", (D) => [D.length]],
  ];
  const check = async (container, what) => {
    for (const [query, want] of queries) {
      const { resources } = await container.items.query(query).fetchAll();
      assertRows(resources, want(idocs), false, `${what}: ${query}`);
    }
  };
  await check(indexed, "default policy");
  await check(scanned, "only /name/? indexed");

  const { resource: def } = await indexed.read();
  for (const [what, policy] of [
    ["replaced by /name/? only", nameOnly],
    ["replaced by everything", { indexingMode: "consistent", automatic: true, includedPaths: [{ path: "/*" }], excludedPaths: [] }],
  ]) {
    await indexed.replace({ ...def, indexingPolicy: policy });
    const until = Date.now() + 200;
    do await check(indexed, what);
    while (Date.now() < until);
  }
});

test("writes between pages: no duplicates, no misses", async () => {
  const { container } = await db.containers.create({ id: uid("writes"), partitionKey: { paths: ["/pk"] } });
  const keys = new Map();
  for (let i = 0; i < 15; i++) {
    const id = `o${String(i).padStart(2, "0")}`;
    const k = ((i * 7) % 15) * 10;
    await container.items.create({ id, pk: `p${i % 2}`, k });
    keys.set(id, k);
  }
  const q = "SELECT VALUE c.id FROM c ORDER BY c.k";
  const first = await container.items.query(q, { maxItemCount: 5 }).fetchNext();
  const last = keys.get(first.resources.at(-1));
  const news = { "n-before": last - 5, "n-tie": last, "n-after": last + 5 };
  for (const [id, k] of Object.entries(news)) {
    await container.items.create({ id, pk: "p0", k });
    keys.set(id, k);
  }
  const { rows } = await runPages(container, q, { maxItemCount: 5, continuationToken: first.continuationToken });
  const seen = [...first.resources, ...rows];
  assert.equal(new Set(seen).size, seen.length, `no duplicates: ${seen}`);
  for (let i = 0; i < 15; i++) assert.ok(seen.includes(`o${String(i).padStart(2, "0")}`), "no pre-existing document missed");
  assert.ok(!seen.includes("n-before") && seen.includes("n-tie") && seen.includes("n-after"), `new documents after the cursor only: ${seen}`);
  for (let i = 1; i < seen.length; i++) assert.ok(keys.get(seen[i - 1]) <= keys.get(seen[i]), "ORDER BY order kept across pages");
});

test("continuation tokens survive a server restart", async () => {
  const dataDir = await makeTempDir();
  let s = await startServer({ dataDir });
  try {
    let c = client(s.endpoint);
    const { database } = await c.databases.create({ id: "restart" });
    const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
    for (const d of docs) await container.items.create(d);
    const shapes = CASES.filter((x) => x.shape);
    const started = [];
    for (const qc of shapes) {
      const p = await container.items.query(spec(qc), { maxItemCount: 2 }).fetchNext();
      if (p.continuationToken) started.push({ qc, rows: p.resources, token: p.continuationToken });
    }
    assert.ok(started.length >= 6);
    c.dispose();
    await s.stop();
    s = await startServer({ dataDir });
    c = client(s.endpoint);
    const again = c.database("restart").container("c");
    for (const { qc, rows, token } of started) {
      const { rows: rest } = await runPages(again, spec(qc), { maxItemCount: 2, continuationToken: token });
      const got = [...rows, ...rest];
      assertRows(qc.star ? strip(got) : got, qc.want(docs), qc.unordered, `${qc.name} resumed after a restart`);
    }
    c.dispose();
  } finally {
    await s.stop();
    await removeDir(dataDir);
  }
});

