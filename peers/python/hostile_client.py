"""A hostile HTTP client of `brownout mcp --http`, for the resource-bound tests: raw
sockets and http.client (no SDK: an SDK client does not flood or stall on purpose).

Usage:
  hostile_client.py sessions --url URL --count N [--source IP]
      POST N `initialize` requests (each a new MCP session, never deleted) from source
      address IP; prints {"status": {code: n}, "retry_after": [..], "refusal": text}.
  hostile_client.py slowloris --url URL --count N --hold S [--source IP]
      Open N connections that each send half a request head and then nothing; print
      "ready" once all are open; after S seconds print {"opened", "closed_by_server"}.
"""

import argparse
import json
import socket
import sys
import time
import http.client
from urllib.parse import urlparse

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"},
    },
}


def sessions(url: str, count: int, source: str) -> dict:
    u = urlparse(url)
    status: dict[str, int] = {}
    retry_after: list[str] = []
    refusal = ""
    for _ in range(count):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30, source_address=(source, 0))
        conn.request(
            "POST",
            u.path,
            body=json.dumps(INIT),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        r = conn.getresponse()
        body = r.read().decode("utf-8", "replace")
        status[str(r.status)] = status.get(str(r.status), 0) + 1
        if r.status == 503:
            retry_after.append(r.getheader("Retry-After") or "")
            refusal = body
        conn.close()
    return {"status": status, "retry_after": retry_after, "refusal": refusal}


def slowloris(url: str, count: int, hold: float, source: str) -> dict:
    u = urlparse(url)
    socks = []
    for _ in range(count):
        s = socket.create_connection((u.hostname, u.port), timeout=10, source_address=(source, 0))
        s.sendall(f"POST {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nX-Slow: ".encode())
        socks.append(s)
    print("ready", flush=True)
    time.sleep(hold)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    return {"opened": len(socks), "closed_by_server": closed}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["sessions", "slowloris"])
    p.add_argument("--url", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--source", default="127.0.0.1")
    a = p.parse_args()
    if a.mode == "sessions":
        out = sessions(a.url, a.count, a.source)
    else:
        out = slowloris(a.url, a.count, a.hold, a.source)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
