"""Scripted MCP client over HTTP for brownout tests, built on the official Python SDK (mcp 2.x).

Usage: http_client.py --url URL [--sse] [--mode legacy|auto|2026-07-28] --script SCRIPT
                      [--timeout S] [--read-timeout S] [--sampling-reply TEXT]

Connects to URL with the SDK's `Client`: streamable HTTP (default), or legacy HTTP+SSE with
--sse (URL is then the /sse endpoint). --mode is the SDK's negotiation mode: `legacy` (the
initialize handshake, 2025-11-25), `2026-07-28` (stateless, no handshake) or `auto`.
With --sampling-reply the client declares sampling and answers every sampling/createMessage
request from the server with TEXT (model "brownout-test"). Runs the operations of SCRIPT (same format as client.py) and prints ONE JSON document:
  {"completed": bool, "protocol_version": str, "ops": [{"index", "op", "ok", "result"|"error",
   "elapsed_ms"}...], "elapsed_ms"}
Exit: 0 script ran (ops may have failed); 2 connection failure; 3 overall --timeout expired.
"""

import argparse
import json
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.sse import sse_client

from client import describe, load_script, now_ms, run_op  # Client has ClientSession's methods


def sampler(text: str) -> Any:
    async def sample(context: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="brownout-test"
        )

    return sample


async def run_script(args: argparse.Namespace, ops: list[dict[str, Any]], doc: dict[str, Any]) -> None:
    server: Any = sse_client(args.url) if args.sse else args.url
    extra: dict[str, Any] = {}
    if args.sampling_reply is not None:
        extra["sampling_callback"] = sampler(args.sampling_reply)
    async with Client(server, mode=args.mode, **extra) as client:
        doc["protocol_version"] = client.protocol_version
        for index, op in enumerate(ops):
            entry: dict[str, Any] = {"index": index, "op": op.get("op")}
            if op.get("name"):
                entry["name"] = op["name"]
            doc["ops"].append(entry)
            t0 = time.monotonic()
            try:
                entry["result"] = await run_op(client, op, args.read_timeout)
                entry["ok"] = True
            except Exception as exc:  # noqa: BLE001 - every failure is data for the test
                entry["ok"] = False
                entry["error"] = describe(exc)
            entry["elapsed_ms"] = now_ms(t0)
    doc["completed"] = True


def main() -> int:
    parser = argparse.ArgumentParser(description="Scripted MCP HTTP client (see module docstring).")
    parser.add_argument("--url", required=True)
    parser.add_argument("--sse", action="store_true", help="legacy HTTP+SSE transport")
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--script", required=True)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--read-timeout", type=float, default=None)
    parser.add_argument("--sampling-reply", default=None, help="answer sampling requests with this text")
    args = parser.parse_args()
    ops = load_script(args.script)
    doc: dict[str, Any] = {"completed": False, "url": args.url, "ops": []}
    start = time.monotonic()

    def emit(code: int) -> int:
        doc["elapsed_ms"] = now_ms(start)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        sys.stdout.flush()
        return code

    async def bounded() -> bool:
        with anyio.move_on_after(args.timeout) as scope:
            await run_script(args, ops, doc)
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
