"""A hostile MCP target for brownout tests: a raw stdio JSON-RPC server (no SDK, so it can
misbehave as no SDK server would) whose `tools/list` never ends.

Usage: hostile_target.py [--per-page N] [--description-bytes B]

Answers `initialize` and `ping`; every `tools/list` page has N tools (default 50) with a
description of B bytes (default 1000) and a `nextCursor`, forever. Logs to stderr the pages
it served.
"""

import argparse
import json
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-page", type=int, default=50)
    parser.add_argument("--description-bytes", type=int, default=1000)
    args = parser.parse_args()
    served = 0
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg or "method" not in msg:
            continue
        method = msg["method"]
        if method == "initialize":
            result = {
                "protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "endless-paginator", "version": "0.0.1"},
            }
        elif method == "tools/list":
            cursor = int((msg.get("params") or {}).get("cursor") or 0)
            tools = [
                {
                    "name": f"tool_{cursor}_{i}",
                    "description": "x" * args.description_bytes,
                    "inputSchema": {"type": "object", "properties": {}},
                }
                for i in range(args.per_page)
            ]
            result = {"tools": tools, "nextCursor": str(cursor + 1)}
            served += 1
            print(f"page {served}", file=sys.stderr, flush=True)
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
