"""An agent that chains tool calls, on the official Python SDK (mcp 2.x), for brownout's
silent-failure tests: each task reads an incident and restarts the service it names, as an
on-call agent would (get_incident -> restart_service).

Usage: chain_agent.py (--url URL | -- CMD [ARGS...]) --tasks N [--policy trust|validate]
                      [--first 1000] [--timeout S]

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


async def read_incident(session: Any, incident: str, policy: str) -> dict[str, Any]:
    args = {"id": incident}
    if policy == "trust":
        request = types.CallToolRequest(params=types.CallToolRequestParams(name="get_incident", arguments=args))
        result = await session.send_request(request, types.CallToolResult)
        return dict(result.structured_content or {})
    result = await session.call_tool("get_incident", args)
    return dict(result.structured_content or {})


async def run_task(session: Any, incident: str, policy: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": incident, "service": None, "acted": False, "refetched": False}
    try:
        try:
            inc = await read_incident(session, incident, policy)
        except RuntimeError as exc:
            # The SDK rejected the structured content: read it again, once.
            entry["refetched"] = True
            entry["first_error"] = str(exc)[:200]
            inc = await read_incident(session, incident, policy)
        entry["service"] = inc.get("service")
        await session.call_tool("restart_service", {"service": inc.get("service")})
        entry["acted"] = True
    except Exception as exc:  # noqa: BLE001 - a failed task is data for the test
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return entry


async def run(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    ids = [f"INC-{args.first + i}" for i in range(args.tasks)]
    if args.url:
        async with Client(args.url, mode="legacy") as client:
            session = client.session
            for incident in ids:
                doc["tasks"].append(await run_task(session, incident, args.policy))
    else:
        params = StdioServerParameters(command=args.cmd[0], args=args.cmd[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                for incident in ids:
                    doc["tasks"].append(await run_task(session, incident, args.policy))
    doc["completed"] = True


def main() -> int:
    parser = argparse.ArgumentParser(description="A chaining agent (see module docstring).")
    parser.add_argument("--url")
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--policy", choices=["trust", "validate"], default="trust")
    parser.add_argument("--timeout", type=float, default=60.0)
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
