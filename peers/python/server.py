"""Small MCP test server for brownout, built on the official Python SDK (mcp 2.x MCPServer).

Tools: echo (text), add (structured {"result": int}), get_weather (structured, pydantic
outputSchema), list_items (long text). Default transport is stdio; for HTTP use
`server.py --transport streamable-http --port N [--host 127.0.0.1] [--json-response] [--stateless]`
(endpoint: /mcp), or `--transport sse` (legacy HTTP+SSE, endpoint: /sse).
"""

import argparse

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

mcp = MCPServer("brownout-python-peer", version="0.1.0", log_level="WARNING")


class Weather(BaseModel):
    """Structured weather report (advertised as the tool's outputSchema)."""

    city: str
    temperature_c: float = Field(description="Temperature in degrees Celsius")
    conditions: str
    humidity_pct: int = Field(ge=0, le=100)


@mcp.tool(structured_output=False)
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def get_weather(city: str) -> Weather:
    """Deterministic fake weather for a city."""
    seed = sum(city.encode())
    return Weather(
        city=city,
        temperature_c=round(-5 + (seed % 350) / 10, 1),
        conditions=["sunny", "cloudy", "rain", "snow", "fog"][seed % 5],
        humidity_pct=seed % 101,
    )


@mcp.tool(structured_output=False)
def list_items(count: int) -> str:
    """Return `count` numbered lines of text (handy for large responses)."""
    return "\n".join(f"item {i:05d}: lorem ipsum dolor sit amet" for i in range(1, count + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--json-response", action="store_true", help="answer POSTs with JSON, not SSE")
    parser.add_argument("--stateless", action="store_true", help="no sessions (stateless HTTP)")
    args = parser.parse_args()
    if args.transport == "stdio":
        mcp.run("stdio")
    elif args.transport == "sse":
        mcp.run("sse", host=args.host, port=args.port)
    else:
        mcp.run(
            "streamable-http",
            host=args.host,
            port=args.port,
            json_response=args.json_response,
            stateless_http=args.stateless,
        )


if __name__ == "__main__":
    main()
