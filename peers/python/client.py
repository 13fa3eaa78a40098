"""Scripted MCP client for brownout tests, built on the official Python SDK (mcp 2.x).

Usage: client.py [--timeout S] [--read-timeout S] --script SCRIPT -- CMD [ARGS...]

Launches CMD as a stdio MCP server, initializes, runs the operations in SCRIPT (a JSON
file path, "-" for stdin, or inline JSON starting with "[") and prints ONE JSON document:
  {"completed": bool, "initialize": {ok, result|error, elapsed_ms},
   "ops": [{"index", "op", "ok", "result"|"error", "elapsed_ms"}...], "elapsed_ms"}
"error" is {"type", "message", and for MCPError "code"/"data", "cause" if chained}.

Operations: {"op": "list_tools"} | {"op": "call_tool", "name", "arguments", "timeout_s", "meta"}
| {"op": "ping"} | {"op": "list_resources"} | {"op": "read_resource", "uri"}
| {"op": "list_prompts"} | {"op": "get_prompt", "name", "arguments"} | {"op": "sleep", "seconds"}
"timeout_s" (default --read-timeout, else none) is the SDK's read_timeout_seconds for call_tool;
on expiry the SDK sends notifications/cancelled and raises MCPError -32001. Results are
model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True), i.e. ~the wire form.
Note: the SDK validates structuredContent against the tool's outputSchema (RuntimeError on mismatch)
and, if the tool was not listed yet on this session, first sends an implicit tools/list.

Exit: 0 script ran (ops may have failed); 2 bad usage/launch/initialize failure;
3 overall --timeout expired. A JSON document is printed on stdout in all cases but usage errors.
"""

import argparse
import builtins
import json
import os
import sys
import threading
import time
from typing import Any

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

_GROUP: Any = getattr(builtins, "BaseExceptionGroup", None) or ()  # Python 3.11+


def now_ms(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 3)


def describe(exc: BaseException) -> dict[str, Any]:
    """JSON description of an exception (unwrapping single-member exception groups)."""
    while isinstance(exc, _GROUP) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, MCPError):
        out["code"] = exc.code
        if exc.data is not None:
            out["data"] = exc.data
    if isinstance(exc, _GROUP):
        out["exceptions"] = [describe(e) for e in exc.exceptions]
    cause = exc.__cause__
    if cause is not None:
        out["cause"] = {"type": type(cause).__name__, "message": str(cause).splitlines()[0] if str(cause) else ""}
    return out


def dump(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


async def run_op(session: ClientSession, op: dict[str, Any], default_timeout: float | None) -> Any:
    kind = op.get("op")
    timeout = op.get("timeout_s", default_timeout)
    if kind == "list_tools":
        return dump(await session.list_tools())
    if kind == "call_tool":
        extra = {"meta": op["meta"]} if "meta" in op else {}  # params._meta (trace context, say)
        return dump(await session.call_tool(op["name"], op.get("arguments") or {}, read_timeout_seconds=timeout, **extra))
    if kind == "ping":
        return dump(await session.send_ping())
    if kind == "list_resources":
        return dump(await session.list_resources())
    if kind == "read_resource":
        return dump(await session.read_resource(op["uri"]))
    if kind == "list_prompts":
        return dump(await session.list_prompts())
    if kind == "get_prompt":
        return dump(await session.get_prompt(op["name"], op.get("arguments")))
    if kind == "sleep":
        await anyio.sleep(float(op.get("seconds", 0)))
        return None
    raise ValueError(f"unknown op {kind!r}")


async def run_script(cmd: list[str], ops: list[dict[str, Any]], read_timeout: float | None, doc: dict[str, Any]) -> None:
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            t0 = time.monotonic()
            try:
                init = await session.initialize()
                doc["initialize"] = {"ok": True, "result": dump(init), "elapsed_ms": now_ms(t0)}
            except Exception as exc:  # noqa: BLE001 - reported, not handled
                doc["initialize"] = {"ok": False, "error": describe(exc), "elapsed_ms": now_ms(t0)}
                return
            for index, op in enumerate(ops):
                entry: dict[str, Any] = {"index": index, "op": op.get("op")}
                if op.get("name"):
                    entry["name"] = op["name"]
                doc["ops"].append(entry)
                t0 = time.monotonic()
                try:
                    entry["result"] = await run_op(session, op, read_timeout)
                    entry["ok"] = True
                except Exception as exc:  # noqa: BLE001 - every failure is data for the test
                    entry["ok"] = False
                    entry["error"] = describe(exc)
                entry["elapsed_ms"] = now_ms(t0)
    doc["completed"] = True


def load_script(arg: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if arg == "-" else arg if arg.lstrip().startswith("[") else open(arg).read()
    ops = json.loads(text)
    if not isinstance(ops, list) or not all(isinstance(o, dict) and "op" in o for o in ops):
        raise ValueError("script must be a JSON array of objects with an 'op' key")
    return ops


def main() -> int:
    parser = argparse.ArgumentParser(description="Scripted MCP stdio client (see module docstring).")
    parser.add_argument("--script", required=True, help="JSON file, '-' for stdin, or inline JSON array")
    parser.add_argument("--timeout", type=float, default=30.0, help="overall deadline in seconds (default 30)")
    parser.add_argument("--read-timeout", type=float, default=None, help="default call_tool read timeout (s)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    args = parser.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("missing server command after --")
    try:
        ops = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"client.py: bad script: {exc}", file=sys.stderr)
        return 2

    doc: dict[str, Any] = {"completed": False, "command": cmd, "initialize": None, "ops": []}
    start = time.monotonic()

    def emit(code: int) -> int:
        doc["elapsed_ms"] = now_ms(start)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        sys.stdout.flush()
        return code

    # Last-resort watchdog: if even cancellation/teardown wedges, print what we have and exit.
    def watchdog() -> None:
        time.sleep(args.timeout + 10)
        doc["error"] = {"type": "Watchdog", "message": "client teardown hung; forced exit"}
        print("client.py: watchdog fired, forcing exit", file=sys.stderr)
        emit(3)
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()

    async def bounded() -> bool:
        with anyio.move_on_after(args.timeout) as scope:
            await run_script(cmd, ops, args.read_timeout, doc)
        return scope.cancelled_caught

    try:
        timed_out = anyio.run(bounded)
    except Exception as exc:  # noqa: BLE001 - launch/transport failure
        doc["error"] = describe(exc)
        print(f"client.py: failed to run {cmd!r}: {doc['error']['type']}: {doc['error']['message']}", file=sys.stderr)
        return emit(2)
    if timed_out:
        doc["error"] = {"type": "TimeoutError", "message": f"overall timeout of {args.timeout}s expired"}
        for entry in doc["ops"]:
            if "ok" not in entry:
                entry.update(ok=False, error={"type": "Cancelled", "message": "overall timeout expired"})
        print(f"client.py: overall timeout of {args.timeout}s expired", file=sys.stderr)
        return emit(3)
    if not (doc["initialize"] or {}).get("ok"):
        print(f"client.py: initialize failed: {doc['initialize']}", file=sys.stderr)
        return emit(2)
    return emit(0)


if __name__ == "__main__":
    sys.exit(main())
