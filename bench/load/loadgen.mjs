// The benchmark's load generator: one Node process, raw TLS sockets and a minimal HTTP/1.1 client
// (no framework), closed-loop keep-alive connections, optionally through an HTTP proxy (CONNECT,
// then TLS inside the tunnel, as an agent with HTTPS_PROXY does).
//
//   node bench/load/loadgen.mjs '<json options>'
//
// options: {host, port,                       where the TLS server is (direct mode)
//           proxy: {host, port, auth?},       CONNECT through this proxy instead; auth = "user:password"
//           connectTarget: "host:port",       the CONNECT authority (proxy mode)
//           servername, ca: [pem paths],      SNI / certificate name, trusted roots
//           path, headers: {..},              the request
//           scenario: "load" | "sse", connections, duration, warmup (seconds), requests (sse)}
//
// Writes "start" and "end" lines when the measured window opens and closes (the caller samples
// process CPU there), then one JSON line with the results. Latencies are in milliseconds.
import fs from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { performance } from "node:perf_hooks";

const o = JSON.parse(process.argv[2]);
const ca = (o.ca || []).map((path) => fs.readFileSync(path));
const CRLF2 = Buffer.from("\r\n\r\n");
const SSE_MARK = Buffer.from('data: {"n":1}');

let head = `GET ${o.path} HTTP/1.1\r\nHost: ${o.servername}\r\nUser-Agent: credgate-bench/1\r\nAccept: */*\r\n`;
for (const [name, value] of Object.entries(o.headers || {})) head += `${name}: ${value}\r\n`;
const requestBytes = Buffer.from(head + "\r\n", "latin1");

function fail(message) {
  process.stdout.write(JSON.stringify({ fatal: message }) + "\n");
  process.exit(1);
}

function openTunnel() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(o.proxy.port, o.proxy.host);
    socket.setNoDelay(true);
    let got = Buffer.alloc(0);
    const auth = o.proxy.auth ? `Proxy-Authorization: Basic ${Buffer.from(o.proxy.auth).toString("base64")}\r\n` : "";
    socket.once("connect", () => {
      socket.write(`CONNECT ${o.connectTarget} HTTP/1.1\r\nHost: ${o.connectTarget}\r\n${auth}\r\n`);
    });
    const onData = (data) => {
      got = Buffer.concat([got, data]);
      const end = got.indexOf(CRLF2);
      if (end < 0) return;
      socket.removeListener("data", onData);
      const status = got.latin1Slice(0, end).split(" ")[1];
      if (status !== "200") return reject(new Error(`CONNECT answered ${got.latin1Slice(0, end)}`));
      if (end + 4 !== got.length) return reject(new Error("bytes after the CONNECT response"));
      resolve(socket);
    };
    socket.on("data", onData);
    socket.once("error", reject);
  });
}

async function openConnection() {
  const raw = o.proxy ? await openTunnel() : undefined;
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      socket: raw,
      host: raw ? undefined : o.host,
      port: raw ? undefined : o.port,
      servername: o.servername,
      ca,
      ALPNProtocols: ["http/1.1"],
    });
    socket.setNoDelay(true);
    socket.once("secureConnect", () => resolve(socket));
    socket.once("error", reject);
  });
}

// One connection's response reader: calls back with (status, firstEventAt) when a response is complete.
class Reader {
  constructor(socket, onEvent, onDone) {
    this.buf = null;
    this.onEvent = onEvent;
    this.onDone = onDone;
    this.reset();
    socket.on("data", (data) => this.feed(data));
  }
  reset() {
    this.status = 0;
    this.inHead = true;
    this.remaining = -1; // Content-Length body bytes left
    this.chunked = false;
    this.sawEvent = false;
  }
  feed(data) {
    this.buf = this.buf === null ? data : Buffer.concat([this.buf, data]);
    for (;;) {
      const buf = this.buf;
      if (buf === null) return;
      if (this.inHead) {
        const end = buf.indexOf(CRLF2);
        if (end < 0) return;
        const text = buf.latin1Slice(0, end);
        this.status = +text.slice(9, 12);
        const lower = text.toLowerCase();
        const at = lower.indexOf("\r\ncontent-length:");
        if (at >= 0) this.remaining = parseInt(lower.slice(at + 17, lower.indexOf("\r\n", at + 2) >>> 0), 10);
        this.chunked = lower.includes("\r\ntransfer-encoding: chunked");
        if (!this.chunked && this.remaining < 0) fail("response without Content-Length or chunked framing");
        this.inHead = false;
        this.buf = end + 4 === buf.length ? null : buf.subarray(end + 4);
        continue;
      }
      if (!this.chunked) {
        if (buf.length < this.remaining) return;
        this.buf = buf.length === this.remaining ? null : buf.subarray(this.remaining);
        this.finish();
        continue;
      }
      // chunked: size line, data, CRLF; the last chunk is 0 and an empty trailer
      const line = buf.indexOf("\r\n");
      if (line < 0) return;
      const size = parseInt(buf.latin1Slice(0, line), 16);
      if (size === 0) {
        if (buf.length < line + 4) return;
        this.buf = buf.length === line + 4 ? null : buf.subarray(line + 4);
        this.finish();
        continue;
      }
      if (buf.length < line + 2 + size + 2) return;
      if (!this.sawEvent && buf.subarray(line + 2, line + 2 + size).includes(SSE_MARK)) {
        this.sawEvent = true;
        this.onEvent(performance.now());
      }
      this.buf = buf.length === line + 4 + size ? null : buf.subarray(line + 4 + size);
    }
  }
  finish() {
    const status = this.status;
    this.reset();
    this.onDone(status);
  }
}

class Samples {
  constructor() {
    this.values = new Float64Array(1 << 16);
    this.count = 0;
  }
  add(value) {
    if (this.count === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.count++] = value;
  }
  summary() {
    const sorted = this.values.slice(0, this.count).sort();
    const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null);
    let sum = 0;
    for (const value of sorted) sum += value;
    return { n: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : null, mean: sorted.length ? sum / sorted.length : null };
  }
}

async function runLoad() {
  const sockets = [];
  for (let i = 0; i < o.connections; i++) sockets.push(await openConnection());
  const latency = new Samples();
  const statuses = {};
  let completed = 0;
  let phase = 0; // 0 warm-up, 1 measuring, 2 stopping
  let windowStart = 0;
  let windowEnd = 0;
  let open = sockets.length;
  const finished = new Promise((resolve) => {
    for (const socket of sockets) {
      let sentAt = 0;
      let sentPhase = 0;
      const send = () => {
        sentAt = performance.now();
        sentPhase = phase;
        socket.write(requestBytes);
      };
      new Reader(socket, () => {}, (status) => {
        const now = performance.now();
        if (phase === 1 && sentPhase === 1) {
          latency.add(now - sentAt);
          completed++;
          statuses[status] = (statuses[status] || 0) + 1;
        } else if (phase === 0 && status !== 200) {
          statuses[status] = (statuses[status] || 0) + 1;
        }
        if (phase === 2) {
          if (--open === 0) resolve();
          return;
        }
        send();
      });
      socket.on("close", () => fail("a connection closed during the run"));
      send();
    }
  });
  await new Promise((r) => setTimeout(r, o.warmup * 1000));
  phase = 1;
  windowStart = performance.now();
  process.stdout.write("start\n");
  await new Promise((r) => setTimeout(r, o.duration * 1000));
  phase = 2;
  windowEnd = performance.now();
  process.stdout.write("end\n");
  await finished;
  for (const socket of sockets) socket.removeAllListeners("close"), socket.destroy();
  const seconds = (windowEnd - windowStart) / 1000;
  // Requests sent in the window and completed after it are not counted: a slight under-count of
  // at most `connections` requests, the same for every target.
  return { requests: completed, seconds, rps: completed / seconds, statuses, latency: latency.summary() };
}

async function runSse() {
  const socket = await openConnection();
  const firstEvent = new Samples();
  const total = new Samples();
  const statuses = {};
  let sentAt = 0;
  let eventAt = 0;
  let measured = false;
  let remaining = o.requests + o.warmupRequests;
  await new Promise((resolve) => {
    const send = () => {
      measured = remaining <= o.requests;
      if (measured && firstEvent.count === 0) process.stdout.write("start\n");
      eventAt = 0;
      sentAt = performance.now();
      socket.write(requestBytes);
    };
    new Reader(socket, (at) => (eventAt = at), (status) => {
      const now = performance.now();
      statuses[status] = (statuses[status] || 0) + 1;
      if (measured && status === 200 && eventAt) {
        firstEvent.add(eventAt - sentAt);
        total.add(now - sentAt);
      }
      if (--remaining === 0) return resolve();
      send();
    });
    socket.on("close", () => fail("the connection closed during the run"));
    send();
  });
  process.stdout.write("end\n");
  socket.removeAllListeners("close");
  socket.destroy();
  return { requests: firstEvent.count, statuses, firstEvent: firstEvent.summary(), total: total.summary() };
}

const run = o.scenario === "sse" ? runSse : runLoad;
run().then(
  (result) => {
    process.stdout.write(JSON.stringify(result) + "\n");
    process.exit(0);
  },
  (error) => fail(String(error && error.message ? error.message : error)),
);
