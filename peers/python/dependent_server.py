"""An MCP server with a dependency, built on the official Python SDK (for brownout's tests
and the seed's dependency-failure experiment).

It answers `lookup` by asking its dependency (another MCP server, at --dependency URL) and
serves `/health`: 200 {"status": "ok"} while the dependency answers, 503
{"status": "degraded", "reason": "..."} while it does not. It degrades, it does not crash:
`lookup` answers isError with the reason while the dependency is down.

    dependent_server.py --port 8932 --dependency http://127.0.0.1:8933/mcp
"""

import argparse
import asyncio
import json
import urllib.error
import urllib.request

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

mcp = MCPServer("brownout-dependent-peer", version="0.1.0", log_level="WARNING")
DEPENDENCY = {"url": ""}


def _ask_dependency() -> None:
    """One `initialize` to the dependency; raises with the reason when it does not answer."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "dependent-peer", "version": "0.1.0"},
            },
        }
    ).encode()
    req = urllib.request.Request(
        DEPENDENCY["url"],
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(req, timeout=2) as resp:
        if resp.status != 200:
            raise RuntimeError(f"the dependency answered HTTP {resp.status}")
        resp.read()
        session = resp.headers.get("Mcp-Session-Id")
    if session:
        # End the session: a check must not leave one (and its server) behind.
        end = urllib.request.Request(
            DEPENDENCY["url"], method="DELETE", headers={"Mcp-Session-Id": session}
        )
        try:
            with urllib.request.urlopen(end, timeout=2) as resp:
                resp.read()
        except (urllib.error.URLError, OSError):
            pass


async def dependency_down() -> str | None:
    """Why the dependency is down, or None when it answers."""
    try:
        await asyncio.to_thread(_ask_dependency)
        return None
    except urllib.error.HTTPError as e:
        return f"dependency answered HTTP {e.code}"
    except (urllib.error.URLError, ConnectionError, OSError, RuntimeError) as e:
        reason = getattr(e, "reason", None) or e
        return f"dependency refused: {reason}"
    except Exception as e:  # noqa: BLE001 - any other failure is still "down", with its reason
        return f"dependency failed: {type(e).__name__}: {e}"


@mcp.tool(structured_output=False)
async def lookup(query: str) -> str:
    """Look `query` up in the dependency."""
    why = await dependency_down()
    if why is not None:
        raise RuntimeError(f"lookup is unavailable: {why}")
    return f"found {query}"


@mcp.custom_route("/health", methods=["GET"])
async def health(_request: Request) -> JSONResponse:
    why = await dependency_down()
    if why is None:
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "degraded", "reason": why}, status_code=503)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8932)
    parser.add_argument("--dependency", required=True, help="the dependency's MCP URL")
    args = parser.parse_args()
    DEPENDENCY["url"] = args.dependency
    mcp.run("streamable-http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
