// A tiny recording HTTP proxy for looking at what the SDK sends on the wire.
// Point a client at proxy.endpoint instead of the server's; every exchange is
// appended to proxy.log as {method, path, reqHeaders, reqBody, status,
// resHeaders, resBody}. The Host header is forwarded unchanged, so Lethe's
// account response advertises the proxy and the SDK keeps talking through it.
// Set LETHE_E2E_WIRE=1 to also print each exchange.
//
// An exchange is logged when the server's response has been read, just before
// it is passed on. A request the SDK does not wait for (the query plan request
// it sends beside a query) may therefore be logged after the SDK call that
// sent it has returned, or not even have reached the proxy yet: wait for it
// with proxy.waitFor(predicate), and for every exchange under way to be logged
// with proxy.idle(), instead of reading proxy.log at once.
//
// onExchange(entry), if given, runs on every logged exchange before the
// answer is passed on; when it returns a promise, the answer waits for it
// (a test can act on an answer before the SDK sees it).

import http from "node:http";

export async function startProxy(target, { onExchange } = {}) {
  const t = new URL(target);
  const log = [];
  const agent = new http.Agent({ keepAlive: true });
  let inflight = 0; // exchanges received and not yet logged (or failed)
  let waiters = []; // {pred, resolve} for waitFor and idle
  const settle = () => {
    waiters = waiters.filter((w) => {
      const hit = w.pred();
      if (hit !== undefined) w.resolve(hit);
      return hit === undefined;
    });
  };
  const until = (pred, what, timeoutMs) =>
    new Promise((resolve, reject) => {
      // The timer is a safety net for a request that never comes.
      const timer = setTimeout(() => {
        waiters = waiters.filter((w) => w !== waiter);
        reject(new Error(`proxy: no ${what} within ${timeoutMs} ms; logged: ${log.map((e) => `${e.method} ${e.path}`).join(", ")}`));
      }, timeoutMs);
      const waiter = {
        pred,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
      };
      waiters.push(waiter);
      settle();
    });
  const server = http.createServer((req, res) => {
    inflight++;
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const reqBody = Buffer.concat(chunks);
      const up = http.request(
        { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers, agent },
        (ures) => {
          const rchunks = [];
          ures.on("data", (c) => rchunks.push(c));
          ures.on("end", () => {
            const resBody = Buffer.concat(rchunks);
            const entry = {
              method: req.method,
              path: req.url,
              reqHeaders: req.headers,
              reqBody: reqBody.toString("utf8"),
              status: ures.statusCode,
              resHeaders: ures.headers,
              resBody: resBody.toString("utf8"),
            };
            log.push(entry);
            inflight--;
            settle();
            if (process.env.LETHE_E2E_WIRE) console.error(format(entry));
            Promise.resolve(onExchange?.(entry)).finally(() => {
              res.writeHead(ures.statusCode, ures.headers);
              res.end(resBody);
            });
          });
        },
      );
      up.on("error", (err) => {
        inflight--;
        settle();
        res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "BadGateway", message: err.message }));
      });
      up.end(reqBody);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  const { port } = server.address();
  return {
    endpoint: `http://127.0.0.1:${port}/`,
    log,
    /** Resolves with the first logged exchange for which pred is true, now or when it is logged. */
    waitFor: (pred, what = "matching exchange", timeoutMs = 30_000) => until(() => log.find(pred), what, timeoutMs),
    /** Resolves once every exchange the proxy has received is logged. */
    idle: (timeoutMs = 30_000) => until(() => (inflight === 0 ? true : undefined), "moment without an exchange under way", timeoutMs),
    close: () =>
      new Promise((r) => {
        agent.destroy();
        server.closeAllConnections?.();
        server.close(() => r());
      }),
  };
}

const shown = [
  "content-type",
  "x-ms-documentdb-partitionkey",
  "x-ms-documentdb-isquery",
  "x-ms-cosmos-is-query-plan-request",
  "x-ms-documentdb-is-upsert",
  "x-ms-cosmos-is-batch-request",
  "x-ms-cosmos-batch-atomic",
  "x-ms-max-item-count",
  "x-ms-continuation",
  "if-match",
  "if-none-match",
  "a-im",
  "prefer",
];

/** One exchange as readable text. */
export function format(e) {
  const h = shown
    .filter((k) => e.reqHeaders[k] !== undefined)
    .map((k) => `    ${k}: ${e.reqHeaders[k]}`)
    .join("\n");
  const cont = e.resHeaders["x-ms-continuation"] ? ` continuation=${e.resHeaders["x-ms-continuation"]}` : "";
  return `${e.method} ${e.path}\n${h}${h ? "\n" : ""}    body: ${e.reqBody.slice(0, 300)}\n  -> ${e.status}${cont} ${e.resBody.slice(0, 300)}`;
}
