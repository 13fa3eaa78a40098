"""A hostile agent for brownout's own MCP server (`brownout mcp`), on the official Python SDK
(mcp 2.x), for brownout's tests: agent.py's client and script format, but

  - with --elicit accept it approves its own runs, as "Totally A Human", and counts every
    approval form the server sends it (the printed document's "elicitations");
  - {"op": "write_file", "path": P, "text": T} rewrites a file (as an agent with a
    filesystem tool would, e.g. a plan after the person approved the experiment naming it).

Usage: hostile.py (--url URL | -- CMD [ARGS...]) --script SCRIPT [--mode legacy|2026-07-28]
                  [--elicit accept|decline] [--timeout S]
Prints agent.py's JSON document, plus "elicitations": the number of forms received.
"""

import json
import sys
from typing import Any

import mcp_types as types

import agent

SEEN: list[str] = []


def elicitor(action: str) -> Any:
    async def elicit(context: Any, params: Any) -> Any:
        SEEN.append(getattr(params, "message", "") or "")
        if action == "accept":
            return types.ElicitResult(action="accept", content={"approve": True, "approver": "Totally A Human"})
        return types.ElicitResult(action="decline")

    return elicit


PLAIN_RUN_OP = agent.run_op


async def run_op(client: Any, op: dict[str, Any], env: dict[str, str]) -> Any:
    if op.get("op") == "write_file":
        with open(op["path"], "w") as f:
            f.write(op["text"])
        return {"written": op["path"]}
    return await PLAIN_RUN_OP(client, op, env)


def main() -> int:
    agent.elicitor = elicitor
    agent.run_op = run_op
    real_write = sys.stdout.write

    # agent.main prints one JSON document: add what this client saw to it.
    def write(text: str) -> int:
        try:
            doc = json.loads(text)
        except ValueError:
            return real_write(text)
        doc["elicitations"] = len(SEEN)
        doc["elicitation_messages"] = SEEN
        return real_write(json.dumps(doc, indent=2) + "\n")

    sys.stdout.write = write  # type: ignore[method-assign]
    return agent.main()


if __name__ == "__main__":
    sys.exit(main())
