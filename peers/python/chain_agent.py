"""An agent that chains tool calls, on the official Python SDK (mcp 2.x), for brownout's
silent-failure tests: each task reads an incident and restarts the service it names, as an
on-call agent would (get_incident -> restart_service).

Usage: chain_agent.py (--url URL [--sse] | -- CMD [ARGS...]) --tasks N [--policy trust|validate]
                      [--first 1000] [--timeout S]
                      [--read get_incident --read-arg id --ids "INC-{n}" --field service
                       --act restart_service --act-arg service]

The chain is configurable: each task calls --read with {--read-arg: --ids formatted with n},
takes --field of its structured content and calls --act with {--act-arg: that value}.
--sse connects to a legacy HTTP+SSE endpoint (URL ending in /sse).

Policies (what the agent does with a result before acting on it):
  trust     reads structuredContent as it comes (the SDK's outputSchema check is bypassed,
            as an agent that does not validate would), then acts on it;
  validate  lets the SDK check structuredContent against the tool's outputSchema; on a
            violation it re-fetches once with the same arguments (noticing), and gives the
            task up if the second read is wrong too.

Prints ONE JSON document: {"completed", "tasks": [{"id", "service", "acted", "refetched",
"error"}...]} -- "service" is what the agent read and acted on (null when it gave up).
Exit: 0 the tasks ran (some may have failed); 2 connection failure; 3 --timeout expired.
"""

import argparse
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client


async def read(session: Any, args: argparse.Namespace, key: str) -> dict[str, Any]:
    call_args = {args.read_arg: key}
    if args.policy == "trust":
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=args.read, arguments=call_args))
        result = await session.send_request(request, types.CallToolResult)
        return dict(result.structured_content or {})
    result = await session.call_tool(args.read, call_args)
    return dict(result.structured_content or {})


async def run_task(session: Any, key: str, args: argparse.Namespace) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": key, "service": None, "acted": False, "refetched": False}
    try:
        try:
            got = await read(session, args, key)
        except RuntimeError as exc:
            # The SDK rejected the structured content: read it again, once.
            entry["refetched"] = True
            entry["first_error"] = str(exc)[:200]
            got = await read(session, args, key)
        entry["service"] = got.get(args.field)
        await session.call_tool(args.act, {args.act_arg: got.get(args.field)})
        entry["acted"] = True
    except Exception as exc:  # noqa: BLE001 - a failed task is data for the test
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return entry


async def run(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    ids = [args.ids.format(n=args.first + i) for i in range(args.tasks)]
    if args.url:
        server: Any = sse_client(args.url) if args.sse else args.url
        async with Client(server, mode="legacy") as client:
            session = client.session
            await session.list_tools()
            for key in ids:
                doc["tasks"].append(await run_task(session, key, args))
    else:
        params = StdioServerParameters(command=args.cmd[0], args=args.cmd[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                for key in ids:
                    doc["tasks"].append(await run_task(session, key, args))
    doc["completed"] = True


def main() -> int:
    parser = argparse.ArgumentParser(description="A chaining agent (see module docstring).")
    parser.add_argument("--url")
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--policy", choices=["trust", "validate"], default="trust")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--sse", action="store_true", help="legacy HTTP+SSE endpoint")
    parser.add_argument("--read", default="get_incident")
    parser.add_argument("--read-arg", default="id")
    parser.add_argument("--ids", default="INC-{n}")
    parser.add_argument("--field", default="service")
    parser.add_argument("--act", default="restart_service")
    parser.add_argument("--act-arg", default="service")
    parser.add_argument("cmd", nargs="*")
    args = parser.parse_args()
    if not args.url and not args.cmd:
        parser.error("give --url or a command after --")
    doc: dict[str, Any] = {"completed": False, "policy": args.policy, "tasks": []}

    async def bounded() -> bool:
        with anyio.move_on_after(args.timeout):
            await run(args, doc)
            return True
        return False

    code = 0
    try:
        if not anyio.run(bounded):
            code = 3
    except Exception as exc:  # noqa: BLE001 - reported as data
        doc["error"] = f"{type(exc).__name__}: {exc}"
        code = 2
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
