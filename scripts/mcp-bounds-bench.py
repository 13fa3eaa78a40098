#!/usr/bin/env python3
"""Measure `brownout mcp` under a hostile client or target (BENCHMARKS.md, issue 18 part 4).

Usage: target/peers/venv/bin/python scripts/mcp-bounds-bench.py [--bin target/debug/brownout]

1. Session flood: RSS of `brownout mcp --http` before and after 2,000 `initialize` requests
   from 32 loopback addresses (default caps), with the status codes seen.
2. Slowloris: 800 half-sent heads held 12 s; how many the server closed, and whether an
   SDK client was served meanwhile (and how long it took).
3. validate_plan on a 240 KB TOML (time), and on a 300 KB one (refused).
4. describe_target on an endless `tools/list` paginator: time, tools, the bound named.
5. simulate at the documented input bounds: time, peak RSS, the bound named.
Prints one JSON document.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "peers", "python")
sys.path.insert(0, PEERS)
import hostile_client  # noqa: E402


def rss_kb(pid: int, key: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def serve_http(bin_: str, tmp: str, extra: list[str]) -> tuple[subprocess.Popen, str]:
    err = open(os.path.join(tmp, "server.err"), "w+")
    p = subprocess.Popen(
        [bin_, "mcp", "--store", os.path.join(tmp, "s.sqlite"), "--audit", os.path.join(tmp, "a.jsonl"),
         "--http", "127.0.0.1:0", *extra],
        stderr=err,
    )
    for _ in range(300):
        err.seek(0)
        text = err.read()
        if "serving MCP at " in text:
            return p, text.split("serving MCP at ")[1].split()[0]
        time.sleep(0.05)
    raise RuntimeError("server did not start")


def agent(script: list, server: list[str] | None = None, url: str | None = None, timeout: int = 120) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(script, f)
    cmd = [sys.executable, os.path.join(PEERS, "agent.py"), "--script", f.name, "--timeout", str(timeout)]
    cmd += ["--url", url] if url else ["--", *server]
    out = subprocess.run(cmd, capture_output=True, text=True)
    return json.loads(out.stdout)


def served(doc: dict) -> bool:
    ops = doc.get("ops", [])
    return bool(doc.get("completed")) and bool(ops) and all(o.get("ok") for o in ops)


def big_toml(n: int) -> str:
    t, i = ["seed = 1\n"], 0
    size = len(t[0])
    while size < n:
        s = f'[[faults]]\nid = "f{i}"\nkind = "latency"\nadded_ms = 5\nprobability = 0.5\n'
        t.append(s)
        size += len(s)
        i += 1
    return "".join(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "brownout"))
    a = ap.parse_args()
    out: dict = {"bin": a.bin}
    with tempfile.TemporaryDirectory() as tmp:
        # 1. Session flood.
        p, url = serve_http(a.bin, tmp, [])
        before = rss_kb(p.pid)
        status: dict[str, int] = {}
        t0 = time.monotonic()
        for k in range(32):
            r = hostile_client.sessions(url, 2000 // 32, f"127.0.0.{k + 2}")
            for code, n in r["status"].items():
                status[code] = status.get(code, 0) + n
        out["session_flood"] = {
            "requests": 2000 // 32 * 32, "status": status, "seconds": round(time.monotonic() - t0, 1),
            "rss_before_mb": round(before / 1024, 1), "rss_after_mb": round(rss_kb(p.pid) / 1024, 1),
        }
        t0 = time.monotonic()
        doc = agent([{"op": "list_tools"}], url=url)
        out["session_flood"]["legit_client_after"] = {
            "served": served(doc), "error": doc.get("error"), "seconds": round(time.monotonic() - t0, 1)}
        p.terminate()
        p.wait()
        # 2. Slowloris.
        p, url = serve_http(a.bin, tmp, [])
        slow = subprocess.Popen(
            [sys.executable, os.path.join(PEERS, "hostile_client.py"), "slowloris", "--url", url,
             "--count", "800", "--hold", "12", "--source", "127.0.0.2"],
            stdout=subprocess.PIPE, text=True)
        assert slow.stdout is not None
        ready = slow.stdout.readline().strip()
        t0 = time.monotonic()
        doc = agent([{"op": "list_tools"}], url=url)
        legit_s = round(time.monotonic() - t0, 1)
        res = json.loads(slow.stdout.readline())
        slow.wait()
        out["slowloris"] = {"ready": ready, **res, "legit_ok": served(doc),
                            "legit_seconds": legit_s, "rss_mb": round(rss_kb(p.pid) / 1024, 1)}
        p.terminate()
        p.wait()
        # 3-5 over stdio.
        server = [a.bin, "mcp", "--store", os.path.join(tmp, "s.sqlite"), "--audit", os.path.join(tmp, "a.jsonl")]
        doc = agent([
            {"op": "call_tool", "name": "validate_plan", "arguments": {"plan": big_toml(240 * 1024), "format": "toml"}},
            {"op": "call_tool", "name": "validate_plan", "arguments": {"plan": big_toml(300 * 1024), "format": "toml"}},
        ], server=server)
        ops = doc.get("ops", [])
        out["validate_plan"] = {
            "toml_240kb_ms": ops[0].get("elapsed_ms") if ops else None,
            "toml_300kb": (ops[1]["result"]["content"][0]["text"] if len(ops) > 1 and ops[1].get("ok") else None),
        }
        policy = os.path.join(tmp, "policy.yaml")
        target = [sys.executable, os.path.join(PEERS, "hostile_target.py")]
        with open(policy, "w") as f:
            f.write(f"mcp_commands:\n  - {json.dumps(' '.join(target))}\n")
        doc = agent([{"op": "call_tool", "name": "describe_target",
                      "arguments": {"target": {"command": target}, "timeout_ms": 60000}}],
                    server=[*server, "--policy", policy])
        op = doc["ops"][0]
        sc = op.get("result", {}).get("structuredContent") or {}
        out["describe_target_endless"] = {"ms": op.get("elapsed_ms"), "tools": len(sc.get("tools", [])),
                                          "pages": sc.get("tools_list_pages"), "stopped_by": sc.get("tools_stopped_by")}
        step = "  - calls: [" + ", ".join(["{tool: t}"] * 100) + "]\n"
        workload = ("name: huge\narrival: {mode: closed, concurrency: 10000}\ntasks: 200000\nsteps:\n" + step * 100
                    + "servers:\n  - name: s\n    tools:\n      t: {latency: {added_ms: 5}}\nclient:\n  timeout_ms: 5000\n")
        # Peak RSS of the server: run it under /usr/bin/time if present, else report none.
        doc = agent([{"op": "call_tool", "name": "simulate",
                      "arguments": {"workload": workload, "gates": ["error_rate < 1% over 10s"]}}], server=server)
        op = doc["ops"][0]
        sc = op.get("result", {}).get("structuredContent") or {}
        out["simulate_at_bounds"] = {"ms": op.get("elapsed_ms"), "stopped_by": sc.get("stopped_by"),
                                     "calls_simulated": (sc.get("report") or {}).get("calls")}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
