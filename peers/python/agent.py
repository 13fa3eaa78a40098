"""An agent's MCP client for brownout's own MCP server (`brownout mcp`), on the official
Python SDK (mcp 2.x), for brownout's tests.

Usage: agent.py (--url URL | -- CMD [ARGS...]) --script SCRIPT [--mode legacy|2026-07-28]
                [--elicit accept|decline] [--timeout S]

Connects over streamable HTTP (--url) or launches CMD as a stdio server, and runs the
operations of SCRIPT (client.py's format) and prints ONE JSON document:
  {"completed": bool, "protocol_version", "ops": [{"index", "op", "ok", "result"|"error"}...]}
Besides client.py's operations:
  {"op": "read_code", "file": F}   wait (10 s at most) for an approval code in the operator's
                                   approvals file F, as a person reading brownout's terminal;
                                   later arguments written "$code" get it;
  "$run_id" in arguments is the run_id of the last start_experiment (or start_gameday) that
  started a run;
  {"op": "call_tool", ..., "progress": true} sends a progress token and returns the
  notifications received as the result's "progress" list.
With --elicit the client declares elicitation (form) and answers every approval form:
accept (approve: true, approver "test-person") or decline. The SDK checks every
structuredContent against its tool's outputSchema.
"""

import argparse
import json
import os
import re
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from client import describe, dump, load_script, now_ms

CODE = re.compile(r"code (\d{3}-\d{3}-\d{3})")


def elicitor(action: str) -> Any:
    async def elicit(context: Any, params: Any) -> Any:
        if action == "accept":
            return types.ElicitResult(action="accept", content={"approve": True, "approver": "test-person"})
        return types.ElicitResult(action="decline")

    return elicit


def substitute(v: Any, env: dict[str, str]) -> Any:
    if isinstance(v, str) and v.startswith("$") and v[1:] in env:
        return env[v[1:]]
    if isinstance(v, dict):
        return {k: substitute(x, env) for k, x in v.items()}
    if isinstance(v, list):
        return [substitute(x, env) for x in v]
    return v


async def read_code(path: str) -> str:
    until = time.monotonic() + 10
    while time.monotonic() < until:
        if os.path.exists(path):
            codes = CODE.findall(open(path).read())
            if codes:
                return codes[-1]
        await anyio.sleep(0.05)
    raise TimeoutError(f"no approval code in {path}")


async def run_op(client: Client, op: dict[str, Any], env: dict[str, str]) -> Any:
    kind = op.get("op")
    if kind == "read_code":
        env["code"] = await read_code(op["file"])
        return {"read": True}
    if kind == "list_tools":
        return dump(await client.list_tools())
    if kind == "call_tool":
        seen: list[dict[str, Any]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append({"progress": progress, "total": total, "message": message})

        r = dump(await client.call_tool(op["name"], substitute(op.get("arguments") or {}, env),
                                        read_timeout_seconds=op.get("timeout_s", 60),
                                        progress_callback=on_progress if op.get("progress") else None))
        if op.get("progress"):
            r["progress"] = seen
        sc = r.get("structuredContent") or {}
        if op["name"] in ("start_experiment", "start_gameday") and sc.get("decision") == "started":
            env["run_id"] = sc["run_id"]
        return r
    if kind == "list_resources":
        return dump(await client.list_resources())
    if kind == "list_resource_templates":
        return dump(await client.list_resource_templates())
    if kind == "read_resource":
        return dump(await client.read_resource(substitute(op["uri"], env)))
    if kind == "sleep":
        await anyio.sleep(float(op.get("seconds", 0)))
        return None
    raise ValueError(f"unknown op {kind!r}")


async def run_script(args: argparse.Namespace, cmd: list[str], ops: list[dict[str, Any]], doc: dict[str, Any]) -> None:
    server: Any = args.url if args.url else StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    extra: dict[str, Any] = {}
    if args.elicit:
        extra["elicitation_callback"] = elicitor(args.elicit)
    env: dict[str, str] = {}
    async with Client(server, mode=args.mode, **extra) as client:
        doc["protocol_version"] = client.protocol_version
        for index, op in enumerate(ops):
            entry: dict[str, Any] = {"index": index, "op": op.get("op")}
            if op.get("name"):
                entry["name"] = op["name"]
            doc["ops"].append(entry)
            t0 = time.monotonic()
            try:
                entry["result"] = await run_op(client, op, env)
                entry["ok"] = True
            except Exception as exc:  # noqa: BLE001 - every failure is data for the test
                entry["ok"] = False
                entry["error"] = describe(exc)
            entry["elapsed_ms"] = now_ms(t0)
    doc["completed"] = True


def main() -> int:
    parser = argparse.ArgumentParser(description="An agent's scripted MCP client (see module docstring).")
    parser.add_argument("--url")
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--script", required=True)
    parser.add_argument("--elicit", choices=["accept", "decline"])
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not args.url and not cmd:
        parser.error("give --url or -- CMD")
    ops = load_script(args.script)
    doc: dict[str, Any] = {"completed": False, "ops": []}
    start = time.monotonic()

    def emit(code: int) -> int:
        doc["elapsed_ms"] = now_ms(start)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        sys.stdout.flush()
        return code

    async def bounded() -> bool:
        with anyio.move_on_after(args.timeout) as scope:
            await run_script(args, cmd, ops, doc)
        return scope.cancelled_caught

    try:
        timed_out = anyio.run(bounded)
    except Exception as exc:  # noqa: BLE001 - connection failure
        doc["error"] = describe(exc)
        return emit(2)
    if timed_out:
        doc["error"] = {"type": "TimeoutError", "message": f"overall timeout of {args.timeout}s expired"}
        return emit(3)
    return emit(0)


if __name__ == "__main__":
    sys.exit(main())
