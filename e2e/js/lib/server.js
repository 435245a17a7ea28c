// Test fixtures: run the lethe binary as a child process and build official
// @azure/cosmos clients against it.
//
//   const srv = await startServer();            // in memory, http
//   after(() => srv.stop());
//   const c = client(srv.endpoint);
//
// Every server started here is also SIGKILLed when the test process exits, and
// the child process and its pipes are unref'd, so a forgotten stop() can never
// keep node (and so `npm test`) from exiting.

import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import path from "node:path";
import { CosmosClient } from "@azure/cosmos";

/** The Cosmos DB emulator's well-known master key, Lethe's default key. */
export const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

const STARTUP_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
const STDERR_KEEP = 64 * 1024;
const LISTENING = /^lethe: listening on (https?:\/\/\S+\/)$/;

const running = new Set();
process.on("exit", () => {
  for (const child of running) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
});

let databases = 0;

/**
 * Returns the URL of a database on the PostgreSQL server at admin (an admin
 * URL): a new one, or for a data directory the one made for it before.
 */
function postgresDatabase(admin, dataDir) {
  const name = dataDir
    ? `lethe_js_dir_${createHash("sha256").update(dataDir).digest("hex").slice(0, 16)}`
    : `lethe_js_${process.pid}_${++databases}`;
  const exists = execFileSync("psql", [admin, "-tAq", "-c", `SELECT 1 FROM pg_database WHERE datname = '${name}'`], { encoding: "utf8" }).trim();
  if (exists !== "1") execFileSync("psql", [admin, "-q", "-v", "ON_ERROR_STOP=1", "-c", `CREATE DATABASE ${name}`]);
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.href;
}

/** The binary under test: $LETHE_BIN (scripts/test sets it to bin/lethe). */
export function letheBin() {
  const bin = process.env.LETHE_BIN;
  if (!bin) {
    throw new Error(
      "LETHE_BIN is not set: build the server (go build -o bin/lethe ./cmd/lethe) and run " +
        "LETHE_BIN=/path/to/bin/lethe npm test",
    );
  }
  return bin;
}

/** Creates a fresh temporary directory; remove it with removeDir. */
export async function makeTempDir(prefix = "lethe-js-") {
  return mkdtemp(path.join(tmpdir(), prefix));
}

export async function removeDir(dir) {
  if (dir) await rm(dir, { recursive: true, force: true });
}

/**
 * Starts `lethe serve --addr 127.0.0.1:0` and resolves once it printed its
 * listening line.
 *
 * @param {object} [opts]
 * @param {string} [opts.dataDir] serve from this directory (it is kept on stop);
 *   without it the server runs --in-memory.
 * @param {boolean} [opts.tls] serve https with a self-signed certificate.
 * @param {string[]} [opts.args] extra flags.
 * @returns {Promise<{endpoint: string, dataDir: string|undefined, pid: number,
 *   stop: () => Promise<{code: number|null, signal: string|null}>,
 *   kill: () => Promise<{code: number|null, signal: string|null}>,
 *   stderr: () => string}>}
 */
export async function startServer({ dataDir, tls = false, args = [] } = {}) {
  const argv = ["serve", "--addr", "127.0.0.1:0"];
  const pg = process.env.LETHE_E2E_POSTGRES;
  if (pg) {
    // On PostgreSQL (scripts/test runs the suite a second time so): a fresh
    // database for a throwaway server, the same one again for the same
    // data directory (a restart); the directory keeps what stays local.
    argv.push("--store", postgresDatabase(pg, dataDir), "--data-dir", dataDir ?? (await makeTempDir("lethe-js-local-")));
  } else if (dataDir) argv.push("--data-dir", dataDir);
  else argv.push("--in-memory");
  if (tls) argv.push("--tls");
  argv.push(...args);

  // Only LETHE_* variables the test chose: keep the caller's environment from
  // reconfiguring the server behind the test's back.
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("LETHE_")) delete env[k];

  const child = spawn(letheBin(), argv, { stdio: ["ignore", "pipe", "pipe"], env });
  running.add(child);
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => {
    stderr = (stderr + s).slice(-STDERR_KEEP);
    if (process.env.LETHE_E2E_VERBOSE) process.stderr.write(s);
  });
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  child.once("error", () => {}); // spawn failure: reported through exited / the startup promise

  const endpoint = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`lethe did not print its listening line within ${STARTUP_TIMEOUT_MS} ms\nstderr:\n${stderr}`));
    }, STARTUP_TIMEOUT_MS);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${letheBin()}: ${err.message}`));
    });
    child.stdout.setEncoding("utf8");
    const onData = (s) => {
      out += s;
      for (const line of out.split("\n").slice(0, -1)) {
        const m = LISTENING.exec(line.trim());
        if (m) {
          clearTimeout(timer);
          child.stdout.off("data", onData);
          child.stdout.resume(); // keep draining, never block the child on a full pipe
          resolve(m[1]);
          return;
        }
      }
    };
    child.stdout.on("data", onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`lethe exited (code ${code}, signal ${signal}) before listening\nstderr:\n${stderr}`));
    });
  });

  // From here on nothing about the child keeps node alive; stop() and kill()
  // hold a timer while they wait, and the exit hook above cleans up leftovers.
  child.unref();
  child.stdout.unref?.();
  child.stderr.unref?.();

  const waitExit = (signal) => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill(signal);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`lethe (pid ${child.pid}) did not exit within ${STOP_TIMEOUT_MS} ms of ${signal}\nstderr:\n${stderr}`));
      }, STOP_TIMEOUT_MS);
      exited.then((r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
  };

  return {
    endpoint,
    dataDir,
    pid: child.pid,
    /** Graceful stop (SIGTERM); resolves with how the process exited. */
    stop: () => waitExit("SIGTERM"),
    /** Hard stop (SIGKILL). */
    kill: () => waitExit("SIGKILL"),
    /** The server's recent log output, for failure messages. */
    stderr: () => stderr,
  };
}

/**
 * Builds a CosmosClient for a Lethe endpoint with the emulator key.
 *
 * For https endpoints the server's certificate is self-signed, so the client
 * gets its own https.Agent with rejectUnauthorized: false. That agent is given
 * only to https clients (the SDK uses `agent` for every request, and an https
 * agent cannot carry http requests), and it leaves the process-wide TLS setting
 * (NODE_TLS_REJECT_UNAUTHORIZED) alone. Endpoint discovery is left on: Lethe
 * advertises the very endpoint the client was given.
 *
 * @param {string} endpoint
 * @param {object} [options] extra CosmosClientOptions (e.g. key).
 */
export function client(endpoint, options = {}) {
  const opts = { endpoint, key: EMULATOR_KEY, ...options };
  if (endpoint.startsWith("https:") && !opts.agent) {
    opts.agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
  }
  return new CosmosClient(opts);
}

/** A unique id for databases, containers and items of one test. */
let counter = 0;
export function uid(prefix = "t") {
  counter++;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
