"""The Python owner of test/python/asgi-cross.test.ts: a Starlette app behind ``IdempotencyMiddleware`` on a SQLite
file that a TypeScript service behind ``idempotency()`` shares. Its handler appends one line per effect to the owner's
file (the count both languages are checked against), then answers 201.

argv[1] is a JSON config: ``{"store", "effects", "requests": [{"path", "key", "account", "body"}]}`` (``store`` as
worker.py reads it: ``sqlite:<path>``, ``postgres:<url>|<table>``, ``redis:<url>|<prefix>``); each request is
sent in turn through Starlette's TestClient, and one JSON line per answer is printed: status, body, replay header.
Or ``{"fingerprints": [[method, target, content_type, body], ...]}``: the fingerprint of each (or its refusal).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from idemkey.asgi import IdempotencyMiddleware, request_fingerprint  # noqa: E402
from idemkey.exact_json import JsonRefusal  # noqa: E402
from worker import open_store  # noqa: E402


def serve(config: dict[str, Any]) -> None:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def charge(request: Request) -> Response:
        body = await request.json()
        with open(config["effects"], "a", encoding="utf-8") as owner:
            owner.write(json.dumps({"by": "python", "amount": body["amount"]}) + "\n")
        with open(config["effects"], encoding="utf-8") as owner:
            count = sum(1 for _ in owner)
        return JSONResponse({"charge": count, "by": "python"}, status_code=201, headers={"location": f"/c/{count}"})

    store = open_store(config["store"])
    app = Starlette(
        routes=[Route("/charges", charge, methods=["POST"])],
        middleware=[Middleware(IdempotencyMiddleware, store=store,
                               scope=lambda s: dict(s["headers"]).get(b"x-account", b"").decode())],
    )
    client = TestClient(app)
    for request in config["requests"]:
        response = client.post(request["path"], content=request["body"].encode(), headers={
            "idempotency-key": request["key"], "x-account": request["account"], "content-type": "application/json"})
        print(json.dumps({"status": response.status_code, "body": response.json(),
                          "replayed": response.headers.get("idempotent-replayed"),
                          "location": response.headers.get("location")}), flush=True)
    store.close()


def fingerprints(cases: list[list[Any]]) -> None:
    for method, target, content_type, body in cases:
        found = request_fingerprint(method, target, content_type, body.encode("utf-8"))
        out = ({"refused": {"refused": found.refused, "path": found.path}} if isinstance(found, JsonRefusal)
               else {"fingerprint": found})
        print(json.dumps(out, ensure_ascii=False, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    config = json.loads(sys.argv[1])
    if "fingerprints" in config:
        fingerprints(config["fingerprints"])
    else:
        serve(config)
