// A tiny recording HTTP proxy for looking at what the SDK sends on the wire.
// Point a client at proxy.endpoint instead of the server's; every exchange is
// appended to proxy.log as {method, path, reqHeaders, reqBody, status,
// resHeaders, resBody}. The Host header is forwarded unchanged, so Lethe's
// account response advertises the proxy and the SDK keeps talking through it.
// Set LETHE_E2E_WIRE=1 to also print each exchange.

import http from "node:http";

export async function startProxy(target) {
  const t = new URL(target);
  const log = [];
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
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
            if (process.env.LETHE_E2E_WIRE) console.error(format(entry));
            res.writeHead(ures.statusCode, ures.headers);
            res.end(resBody);
          });
        },
      );
      up.on("error", (err) => {
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
