"""Two MCP servers of one team, built on the official Python SDK (mcp 2.x MCPServer), for
brownout's several-servers tests (an experiment's `target.servers`).

  team_server.py --role incidents            get_incident(id) -> {id, service, severity, title}
  team_server.py --role ops --record FILE    restart_service(service) -> {restarted, ok},
                                             list_deployments() -> {services}

The incidents server names a service per incident id (deterministic). The ops server appends
every service it restarts to FILE, one per line: the truth, from the target's side, of what an
agent did with the incidents it read. Both speak stdio, or streamable HTTP with --port N.
"""

import argparse
import hashlib
import os

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

SERVICES = [
    "payments-api", "checkout-api", "search-indexer", "billing-worker", "ledger-api",
    "auth-gateway", "inventory-api", "shipping-worker", "pricing-api", "catalog-api",
]


class Incident(BaseModel):
    id: str
    service: str
    severity: str
    title: str


class Deployments(BaseModel):
    services: list[str]


class Restart(BaseModel):
    restarted: str
    ok: bool


def incident(id: str) -> Incident:
    """The incident with this id (the same every time: tests read the truth from here)."""
    h = int(hashlib.sha256(id.encode()).hexdigest(), 16)
    return Incident(
        id=id,
        service=SERVICES[h % len(SERVICES)],
        severity=["sev1", "sev2", "sev3"][h % 3],
        title="error rate above objective",
    )


def incidents_server() -> MCPServer:
    mcp = MCPServer("team-incidents", version="1.0.0", log_level="WARNING")

    @mcp.tool()
    def get_incident(id: str) -> Incident:
        """The incident with this id, and the service it is about."""
        return incident(id)

    return mcp


def ops_server(record: str | None) -> MCPServer:
    mcp = MCPServer("team-ops", version="1.0.0", log_level="WARNING")

    @mcp.tool()
    def restart_service(service: str) -> Restart:
        """Restart a service (recorded, nothing real is restarted)."""
        if record:
            # One write per line with O_APPEND: the processes of several sessions interleave
            # whole lines.
            fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (service + "\n").encode())
            finally:
                os.close(fd)
        return Restart(restarted=service, ok=True)

    @mcp.tool()
    def list_deployments() -> Deployments:
        """The services deployed now."""
        return Deployments(services=SERVICES)

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["incidents", "ops"], required=True)
    parser.add_argument("--record", help="ops: append each restarted service to this file")
    parser.add_argument("--port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT (/mcp)")
    args = parser.parse_args()
    server = incidents_server() if args.role == "incidents" else ops_server(args.record)
    if args.port:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
