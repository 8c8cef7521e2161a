"""A Python worker for the cross-language tests (test/python/*.test.ts): calls tools through the Python harness on a
shared store, the fake owner being a file each effect is appended to. The TypeScript twin is
test/python/fixtures/worker.ts; both take the same JSON config as their one argument:

    {"store": "sqlite:<path>" | "postgres:<url>|<table>" | "redis:<url>|<prefix>", "owner": "<file>",
     "calls": [{"task": "...", "effect": "keyed" | "unguarded" | ...}], "leaseMs": 300, "hang": false, "hangAt": 0, "ready": false, "toolMs": 20,
     "loseAnswer": false, "ledgerVersion": 1}

Prints one JSON line at the end: each call's value or error (class and reason). With "hang", the tool writes its
start to the owner file and blocks, so that the test can kill the worker mid-call; with "hangAt": n, only the n-th
tool run of the process does. "toolMs" is the longest pause between a tool's start and its effect. With
"loseAnswer", the tool records its effect and then fails as a lost answer does (ConnectionResetError), so that an
unguarded call's outcome is unknown. "ledgerVersion" is the ledger format the harness writes.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from idemkey import OutcomeUnknownError, create_harness, define_tool, sqlite_store  # noqa: E402

ARGS = {"service": "api", "version": 3}


def open_store(spec: str) -> Any:
    kind, _, rest = spec.partition(":")
    if kind == "sqlite":
        return sqlite_store(rest)
    if kind == "postgres":
        from idemkey.postgres import postgres_store

        url, _, table = rest.rpartition("|")
        return postgres_store(url, table=table)
    if kind == "redis":
        from idemkey.redis import redis_store

        url, _, prefix = rest.rpartition("|")
        return redis_store(url, prefix=prefix)
    raise SystemExit(f"unknown store {spec}")


def append(path: str, line: dict[str, Any]) -> None:
    # One write of a short line with O_APPEND: whole, whatever else appends meanwhile.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def main() -> None:
    config = json.loads(sys.argv[1])
    store = open_store(config["store"])
    harness = create_harness(
        store=store, lease_ms=config.get("leaseMs", 30_000), min_delay_ms=1, max_delay_ms=5,
        wait_min_delay_ms=5, wait_max_delay_ms=50, wait_timeout_ms=60_000,
        ledger_version=config.get("ledgerVersion", 1),
    )
    owner, hang, hang_at = config["owner"], config.get("hang", False), config.get("hangAt", 0)
    runs = [0]

    def tool_for(effect: str) -> Any:
        def run(args: Any, ctx: Any) -> Any:
            append(owner, {"event": "start", "key": ctx.idempotency_key, "lang": "python", "pid": os.getpid(),
                           "attempt": ctx.attempt, "effect": effect})
            runs[0] += 1
            if hang or runs[0] == hang_at:
                time.sleep(3600)
            time.sleep(random.random() * config.get("toolMs", 20) / 1000)
            append(owner, {"event": "effect", "key": ctx.idempotency_key, "lang": "python", "pid": os.getpid(),
                           "effect": effect})
            if config.get("loseAnswer"):
                raise ConnectionResetError("socket hang up")
            return {"by": "python", "pid": os.getpid(), "attempt": ctx.attempt}

        return define_tool(f"deploy-{effect}", effect, run)

    tools = {effect: tool_for(effect) for effect in ("keyed", "idempotent", "unguarded")}
    if config.get("ready"):
        # Set up: say so, and start when told, so that workers of both languages start together.
        print("ready", flush=True)
        sys.stdin.readline()
    results = []
    for call in config["calls"]:
        try:
            outcome = harness.call_with_outcome(call["task"], tools[call["effect"]], ARGS)
            results.append({"task": call["task"], "value": outcome.value, "replayed": outcome.replayed})
        except OutcomeUnknownError as error:
            results.append({"task": call["task"], "error": "OutcomeUnknownError", "reason": error.reason})
    print(json.dumps({"results": results}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
