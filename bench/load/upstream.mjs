// The benchmark's HTTPS upstream: one process, raw TLS + a minimal HTTP/1.1 responder (no framework),
// so that it costs as little CPU as possible and the direct baseline is high.
//
//   node bench/load/upstream.mjs '{"key":"k.pem","cert":"c.pem","secret":"...","sseDelayMs":20}'
//
// Prints {"port": N} once listening. Routes (GET only; the request must carry `X-Bench-Key: <secret>`,
// else 401 — so every 200 through a proxy proves the credential was injected):
//   /json  200, ~1 KiB JSON body, Content-Length
//   /sse   200 text/event-stream, chunked: head + event 1 at once, event 2 + end after sseDelayMs
import fs from "node:fs";
import tls from "node:tls";

const options = JSON.parse(process.argv[2]);
const secretLine = `\r\nx-bench-key: ${options.secret.toLowerCase()}\r\n`;
const sseDelayMs = options.sseDelayMs ?? 20;

const items = [];
for (let i = 0; items.length === 0 || JSON.stringify({ object: "list", data: items }).length < 1000; i++) {
  items.push({ id: `item_${String(i).padStart(4, "0")}`, type: "bench", created: 1735689600 + i, ok: true });
}
const jsonBody = Buffer.from(JSON.stringify({ object: "list", data: items }));
const jsonResponse = Buffer.concat([
  Buffer.from(
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" +
      `Content-Length: ${jsonBody.length}\r\nCache-Control: no-store\r\n\r\n`,
    "latin1",
  ),
  jsonBody,
]);
const unauthorizedBody = Buffer.from('{"error":"missing or wrong X-Bench-Key"}');
const unauthorized = Buffer.concat([
  Buffer.from(`HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${unauthorizedBody.length}\r\n\r\n`),
  unauthorizedBody,
]);
const notFound = Buffer.from("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
const chunk = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const sseFirst = Buffer.from(sseHead + chunk('event: message\ndata: {"n":1}\n\n'), "latin1");
const sseRest = Buffer.from(chunk('event: message\ndata: {"n":2,"done":true}\n\n') + "0\r\n\r\n", "latin1");

const stats = { requests: 0, unauthorized: 0 };

const server = tls.createServer(
  {
    key: fs.readFileSync(options.key),
    cert: fs.readFileSync(options.cert),
    ALPNProtocols: ["http/1.1"],
  },
  (socket) => {
    socket.setNoDelay(true);
    let pending = null;
    let busy = false; // an SSE response is in progress: later pipelined requests wait
    const handle = () => {
      while (!busy && pending !== null) {
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) {
          if (pending.length > 65536) socket.destroy();
          return;
        }
        const head = pending.latin1Slice(0, end + 4);
        pending = end + 4 === pending.length ? null : pending.subarray(end + 4);
        respond(head);
      }
    };
    const respond = (head) => {
      stats.requests++;
      const lower = head.toLowerCase();
      const close = lower.includes("\r\nconnection: close\r\n");
      const path = head.slice(head.indexOf(" ") + 1, head.indexOf(" ", head.indexOf(" ") + 1));
      if (!lower.includes(secretLine)) {
        stats.unauthorized++;
        socket.write(unauthorized);
      } else if (path === "/json") {
        socket.write(jsonResponse);
      } else if (path === "/sse") {
        socket.write(sseFirst);
        busy = true;
        setTimeout(() => {
          busy = false;
          if (!socket.destroyed) socket.write(sseRest);
          if (close) socket.end();
          else handle();
        }, sseDelayMs);
        return;
      } else {
        socket.write(notFound);
      }
      if (close) socket.end();
    };
    socket.on("data", (data) => {
      pending = pending === null ? data : Buffer.concat([pending, data]);
      handle();
    });
    socket.on("error", () => {});
  },
);
server.on("tlsClientError", () => {});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port, jsonBytes: jsonBody.length }) + "\n");
});
process.on("SIGTERM", () => {
  process.stderr.write(JSON.stringify(stats) + "\n");
  process.exit(0);
});
