"""A real OTLP/HTTP receiver for brownout's tests: decodes exports with the official
OpenTelemetry protobuf definitions (PyPI `opentelemetry-proto`) and writes one JSON line per
span / metric data point to --out.

    otlp_receiver.py --out spans.jsonl [--port 0] [--status 200]

Prints `listening PORT` on stdout once it accepts connections. Accepts POST /v1/traces and
/v1/metrics with `Content-Type: application/x-protobuf` (415 otherwise), answers with the
service's protobuf response (or --status, to play a failing collector).
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

MAX_BODY = 64 * 1024 * 1024
LOCK = threading.Lock()


def value(v):
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def spans(req):
    for rs in req.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield {
                    "type": "span",
                    "resource": resource,
                    "scope": ss.scope.name,
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "trace_state": s.trace_state,
                    "name": s.name,
                    "kind": s.kind,
                    "start_unix_nano": s.start_time_unix_nano,
                    "end_unix_nano": s.end_time_unix_nano,
                    "attributes": attrs(s.attributes),
                    "events": [
                        {"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": attrs(e.attributes)}
                        for e in s.events
                    ],
                    "status": {"code": s.status.code, "message": s.status.message},
                }


def metrics(req):
    for rm in req.resource_metrics:
        resource = attrs(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                d = MessageToDict(m, preserving_proto_field_name=True)
                yield {"type": "metric", "resource": resource, "name": m.name, "metric": d}


class Handler(BaseHTTPRequestHandler):
    out = None
    status = 200

    def log_message(self, *args):
        pass

    def do_POST(self):
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-protobuf":
            self.send_error(415, "application/x-protobuf only")
            return
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.send_error(413)
            return
        body = self.rfile.read(n)
        if self.path == "/v1/traces":
            req, resp, rows = ExportTraceServiceRequest(), ExportTraceServiceResponse(), spans
        elif self.path == "/v1/metrics":
            req, resp, rows = ExportMetricsServiceRequest(), ExportMetricsServiceResponse(), metrics
        else:
            self.send_error(404)
            return
        try:
            req.ParseFromString(body)
        except Exception as e:  # a body that is not the message: the exporter's bug
            self.send_error(400, f"undecodable: {e}")
            return
        if self.status != 200:
            self.send_error(self.status)
            return
        with LOCK:
            for row in rows(req):
                self.out.write(json.dumps(row) + "\n")
            self.out.flush()
        payload = resp.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--status", type=int, default=200)
    a = p.parse_args()
    Handler.out = open(a.out, "a", encoding="utf-8")
    Handler.status = a.status
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
