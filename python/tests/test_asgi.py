"""The ASGI middleware (idemkey.asgi), ported from the TypeScript middleware's tests (test/owner/middleware.test.ts):
each request goes through Starlette's own request path (its TestClient), and every effect is counted in a list
the handler appends to, apart from the store."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from idemkey.asgi import IdempotencyMiddleware, mark_no_effect, request_fingerprint, store_key
from idemkey.store import ClaimInput, memory_store
from stores import factories

PROBLEMS = "https://idemkey.dev/problems/"


class Events:
    """What the middleware told `on_error`, kept rather than warned."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.seen.append(event)


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def new_store(request: Any, tmp_path_factory: Any) -> Any:
    """Makes stores of one kind (each test that takes it runs on every store), closed (dropped) after the test."""
    found = factories(tmp_path_factory)
    if request.param not in found:
        pytest.fail(f"the {request.param} store's module is missing")
    made: list[Any] = []

    def make(clock: Any = None) -> Any:
        made.append(found[request.param](clock))
        return made[-1]

    yield make
    for store in made:
        store.close()


def make_app(store: Any, effects: list[Any], **options: Any) -> Starlette:
    async def charge(request: Request) -> Response:
        body = await request.json()
        effects.append(body)
        return JSONResponse({"charge": len(effects), "amount": body.get("amount")}, status_code=201,
                            headers={"location": f"/charges/{len(effects)}", "x-cost": "3", "x-other": "no"})

    async def boom(request: Request) -> Response:
        effects.append("boom")
        raise RuntimeError("after the charge")

    async def nothing(request: Request) -> Response:
        effects.append("nothing")
        error = RuntimeError("the ledger is down, nothing was charged")
        error.no_effect = True  # type: ignore[attr-defined]
        raise error

    async def marked(request: Request) -> Response:
        effects.append("marked")
        mark_no_effect(request)
        return JSONResponse({"error": "ledger unavailable, nothing was charged"}, status_code=503)

    async def stream(request: Request) -> Response:
        effects.append("stream")
        size = int(request.query_params.get("size", "4"))

        async def chunks() -> Any:
            for i in range(size):
                yield f"chunk {i}\n".encode()

        return StreamingResponse(chunks(), media_type="text/plain")

    async def binary(request: Request) -> Response:
        effects.append("binary")
        return Response(bytes(range(256)), media_type="application/octet-stream")

    async def read(request: Request) -> Response:
        effects.append("read")
        return JSONResponse({"read": len(effects)})

    options.setdefault("scope", "single-tenant")
    options.setdefault("on_error", Events())
    return Starlette(
        routes=[
            Route("/charges", charge, methods=["POST", "PATCH", "GET"]),
            Route("/boom", boom, methods=["POST"]),
            Route("/nothing", nothing, methods=["POST"]),
            Route("/marked", marked, methods=["POST"]),
            Route("/stream", stream, methods=["POST"]),
            Route("/binary", binary, methods=["POST"]),
            Route("/read", read, methods=["GET", "POST"]),
        ],
        middleware=[Middleware(IdempotencyMiddleware, store=store, **options)],
    )


def client(app: Any) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)


def post(c: TestClient, path: str, key: str | None, body: Any = None, **kwargs: Any) -> Any:
    headers = {} if key is None else {"idempotency-key": key}
    headers.update(kwargs.pop("headers", {}))
    return c.post(path, json={"amount": 500} if body is None else body, headers=headers, **kwargs)


def problem(response: Any) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) == {"type", "title", "status", "detail"}
    assert body["status"] == response.status_code
    return body


def test_a_retry_gets_the_saved_response_and_the_handler_runs_once(new_store: Any) -> None:
    effects: list[Any] = []
    c = client(make_app(new_store(), effects, keep_headers=["X-Cost"]))
    first = post(c, "/charges", "k1")
    again = post(c, "/charges", "k1")
    assert (first.status_code, first.json()) == (201, {"charge": 1, "amount": 500})
    assert "idempotent-replayed" not in first.headers
    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["x-should-retry"] == "false"
    # Saved: content-type and location always, x-cost as asked; x-other not.
    assert again.headers["location"] == "/charges/1"
    assert again.headers["content-type"] == "application/json"
    assert again.headers["x-cost"] == "3"
    assert "x-other" not in again.headers
    assert len(effects) == 1


def test_a_json_body_counts_as_its_value_member_order_and_whitespace_apart() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    first = c.post("/charges", content=b'{"amount": 500, "currency": "eur"}',
                   headers={"idempotency-key": "k", "content-type": "application/json"})
    again = c.post("/charges", content=b'{ "currency":"eur",\n "amount":5.00e2 }',
                   headers={"idempotency-key": "k", "content-type": "application/json"})
    assert (first.status_code, again.status_code, again.headers["idempotent-replayed"]) == (201, 201, "true")
    assert len(effects) == 1


def test_the_same_key_for_another_request_is_422(new_store: Any) -> None:
    effects: list[Any] = []
    c = client(make_app(new_store(), effects))
    assert post(c, "/charges", "k1").status_code == 201
    other_body = post(c, "/charges", "k1", {"amount": 501})
    other_path = post(c, "/charges?x=1", "k1")
    other_method = c.patch("/charges", json={"amount": 500}, headers={"idempotency-key": "k1"})
    for response in (other_body, other_path, other_method):
        assert response.status_code == 422
        assert problem(response)["type"] == PROBLEMS + "key-reused"
        assert response.headers["x-should-retry"] == "false"
    assert len(effects) == 1


def test_the_same_key_while_the_first_runs_is_409_with_retry_after_never_two_handlers(new_store: Any) -> None:
    effects: list[Any] = []
    started, release = threading.Event(), threading.Event()

    async def slow(request: Request) -> Response:
        effects.append("slow")
        started.set()
        await anyio.to_thread.run_sync(release.wait)
        return JSONResponse({"done": True}, status_code=201)

    app = Starlette(routes=[Route("/slow", slow, methods=["POST"])],
                    middleware=[Middleware(IdempotencyMiddleware, store=new_store(), scope="single-tenant",
                                           retry_after_seconds=2)])
    c = client(app)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(post(c, "/slow", "k")))
    first.start()
    assert started.wait(10)
    busy = post(c, "/slow", "k")
    release.set()
    first.join(10)
    assert busy.status_code == 409
    assert problem(busy)["type"] == PROBLEMS + "key-in-flight"
    assert (busy.headers["retry-after"], busy.headers["x-should-retry"]) == ("2", "true")
    assert results[0].status_code == 201
    assert post(c, "/slow", "k").headers["idempotent-replayed"] == "true"
    assert effects == ["slow"]


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ([("idempotency-key", "")], "empty"),
        ([("idempotency-key", "x" * 256)], "256 characters long"),
        ([("idempotency-key", "a,b")], "comma"),
        ([("idempotency-key", "caf\u00e9")], "not printable ASCII"),
        ([("idempotency-key", "a"), ("idempotency-key", "b")], "more than once"),
        ([("idempotency-key", '"a" ;p=1')], "parameters"),
    ],
)
def test_an_invalid_key_is_400_and_the_handler_does_not_run(headers: list[tuple[str, str]], why: str) -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    response = c.post("/charges", json={"amount": 1},
                      headers=[(n.encode(), v.encode("latin-1")) for n, v in headers])  # type: ignore[arg-type]
    assert response.status_code == 400
    body = problem(response)
    assert body["type"] == PROBLEMS + "key-invalid"
    assert why in body["detail"]
    assert effects == []


def test_a_quoted_key_is_the_same_key_as_a_bare_one() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    post(c, "/charges", "abc")
    assert post(c, "/charges", '"abc"').headers["idempotent-replayed"] == "true"
    assert len(effects) == 1


def test_no_key_is_400_when_required_and_passes_untouched_otherwise() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    missing = post(c, "/charges", None)
    assert missing.status_code == 400
    assert problem(missing)["type"] == PROBLEMS + "key-missing"
    # Other methods pass untouched, key or not.
    assert c.get("/read", headers={"idempotency-key": ""}).status_code == 200
    lenient = client(make_app(memory_store(), effects, required=False))
    assert [post(lenient, "/charges", None).status_code for _ in range(2)] == [201, 201]
    assert effects == ["read", {"amount": 500}, {"amount": 500}]


def test_scope_is_required_and_the_error_names_what_to_add() -> None:
    with pytest.raises(TypeError, match=r"scope is required.*single-tenant"):
        IdempotencyMiddleware(Starlette(), store=memory_store())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"scope must be a function"):
        IdempotencyMiddleware(Starlette(), store=memory_store(), scope="everyone")
    with pytest.raises(TypeError, match=r"store must be an idemkey store"):
        IdempotencyMiddleware(Starlette(), store=object(), scope="single-tenant")
    with pytest.raises(TypeError, match=r"lease_ms must be a positive integer"):
        IdempotencyMiddleware(Starlette(), store=memory_store(), scope="single-tenant", lease_ms=0)
    with pytest.raises(TypeError, match=r"methods\[1\] must be an HTTP token"):
        IdempotencyMiddleware(Starlette(), store=memory_store(), scope="single-tenant", methods=["POST", "P T"])


def test_keys_are_per_scope_one_caller_never_replays_anothers_response() -> None:
    effects: list[Any] = []
    app = make_app(memory_store(), effects,
                   scope=lambda s: dict(s["headers"]).get(b"x-account", b"").decode())
    c = client(app)
    a = post(c, "/charges", "k", headers={"x-account": "a"})
    b = post(c, "/charges", "k", headers={"x-account": "b"})
    assert (a.json()["charge"], b.json()["charge"]) == (1, 2)
    assert "idempotent-replayed" not in b.headers
    assert post(c, "/charges", "k", headers={"x-account": "a"}).json()["charge"] == 1


def test_an_async_scope_is_awaited_and_a_scope_that_is_not_a_string_is_an_error() -> None:
    effects: list[Any] = []

    async def account(s: Any) -> str:
        return "acct"

    assert post(client(make_app(memory_store(), effects, scope=account)), "/charges", "k").status_code == 201
    broken = client(make_app(memory_store(), effects, scope=lambda s: None))
    assert post(broken, "/charges", "k").status_code == 500
    assert len(effects) == 1


def test_a_handler_that_throws_leaves_the_key_outcome_unknown_and_never_runs_again(new_store: Any) -> None:
    effects: list[Any] = []
    store = new_store()
    c = client(make_app(store, effects))
    assert post(c, "/boom", "k").status_code == 500
    retry = post(c, "/boom", "k")
    assert retry.status_code == 409
    assert problem(retry)["type"] == PROBLEMS + "outcome-unknown"
    assert retry.headers["x-should-retry"] == "false"
    assert effects == ["boom"]
    (record,) = store.list(prefix="http:")
    assert (record.state, record.token) == ("outcome_unknown", None)


def test_a_handler_that_says_it_did_nothing_releases_the_key_and_the_retry_runs(new_store: Any) -> None:
    effects: list[Any] = []
    store = new_store()
    c = client(make_app(store, effects))
    assert [post(c, "/nothing", "k").status_code for _ in range(2)] == [500, 500]
    assert [post(c, "/marked", "m").status_code for _ in range(2)] == [503, 503]
    assert effects == ["nothing", "nothing", "marked", "marked"]
    assert store.list(prefix="http:") == []


def test_the_save_hook_decides_and_a_failing_hook_keeps_the_default() -> None:
    effects: list[Any] = []
    events = Events()

    def save(outcome: Any) -> bool | None:
        if outcome.status == 201:
            raise ValueError("hook broke")
        return None

    c = client(make_app(memory_store(), effects, save=lambda o: False))
    assert [post(c, "/charges", "k").json()["charge"] for _ in range(2)] == [1, 2]
    c = client(make_app(memory_store(), effects, save=save, on_error=events))
    assert post(c, "/charges", "k").status_code == 201
    assert post(c, "/charges", "k").headers["idempotent-replayed"] == "true"
    assert [(e.phase, type(e.error).__name__) for e in events.seen] == [("save", "ValueError")]


def test_a_streamed_response_passes_through_and_is_saved_whole(new_store: Any) -> None:
    effects: list[Any] = []
    c = client(make_app(new_store(), effects))
    first = post(c, "/stream?size=3", "k")
    again = post(c, "/stream?size=3", "k")
    assert first.text == "chunk 0\nchunk 1\nchunk 2\n"
    assert (again.text, again.headers["content-type"]) == (first.text, "text/plain; charset=utf-8")
    assert again.headers["idempotent-replayed"] == "true"
    assert effects == ["stream"]


def test_a_binary_body_is_saved_as_base64_and_replayed_byte_for_byte(new_store: Any) -> None:
    effects: list[Any] = []
    store = new_store()
    c = client(make_app(store, effects))
    first = post(c, "/binary", "k")
    assert post(c, "/binary", "k").content == first.content == bytes(range(256))
    (record,) = store.list(prefix="http:")
    assert json.loads(record.result)["encoding"] == "base64"


def test_a_response_over_max_response_bytes_is_sent_not_saved_and_retries_get_500() -> None:
    effects: list[Any] = []
    events = Events()
    c = client(make_app(memory_store(), effects, max_response_bytes=20, on_error=events))
    first = post(c, "/stream?size=5", "k")
    assert len(first.content) == 40
    retry = post(c, "/stream?size=5", "k")
    assert retry.status_code == 500
    assert problem(retry)["type"] == PROBLEMS + "response-not-saved"
    assert retry.headers["idempotent-replayed"] == "true"
    assert effects == ["stream"]
    assert [(e.phase, type(e.error).__name__) for e in events.seen] == [("save", "ResponseTooLargeError")]


def test_a_body_over_max_body_bytes_is_413_before_the_key_is_claimed() -> None:
    effects: list[Any] = []
    store = memory_store()
    c = client(make_app(store, effects, max_body_bytes=64))
    declared = post(c, "/charges", "k", {"pad": "x" * 100})

    def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 10

    counted = c.post("/charges", content=chunks(), headers={"idempotency-key": "k2"})
    for response in (declared, counted):
        assert response.status_code == 413
        assert problem(response)["type"] == PROBLEMS + "body-too-large"
    assert effects == [] and store.list() == []
    assert post(c, "/charges", "k").status_code == 201


def test_a_json_body_with_no_single_value_is_refused_with_400() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    for body, why in ((b'{"a": 1, "a": 2}', 'member "a" appears twice'), (b'{"a": "\\ud800"}', "lone surrogate"),
                      (b'{"a": ', "not JSON text")):
        response = c.post("/charges", content=body,
                          headers={"idempotency-key": "k", "content-type": "application/json"})
        assert response.status_code == 400
        assert problem(response)["type"] == PROBLEMS + "body-invalid"
        assert why in response.json()["detail"]
    assert effects == []


def test_the_store_failing_is_503_and_the_handler_never_runs_without_the_lock() -> None:
    effects: list[Any] = []
    events = Events()

    class Down:
        def __getattr__(self, name: str) -> Any:
            def fail(*args: Any, **kwargs: Any) -> Any:
                raise ConnectionError("store down")
            return fail

    c = client(make_app(Down(), effects, on_error=events))
    response = post(c, "/charges", "k")
    assert response.status_code == 503
    assert problem(response)["type"] == PROBLEMS + "store-unavailable"
    assert (response.headers["retry-after"], response.headers["x-should-retry"]) == ("1", "true")
    assert effects == []
    assert [e.phase for e in events.seen] == ["claim"]


def test_a_retry_that_takes_over_a_lapsed_key_answers_outcome_unknown_and_never_reruns(new_store: Any) -> None:
    effects: list[Any] = []
    now = [1_000_000]
    store = new_store(lambda: now[0])
    body = b'{"amount":500}'
    fingerprint = request_fingerprint("POST", "/charges", "application/json", body)
    assert isinstance(fingerprint, str)
    # A request that claimed the key and died: its lease ran out.
    store.claim(store_key("", "k"), ClaimInput(fingerprint, "dead-token", 10, 1000, data='{"scope":"","key":"k"}'))
    now[0] += 100
    c = client(make_app(store, effects))
    retry = c.post("/charges", content=body, headers={"idempotency-key": "k", "content-type": "application/json"})
    assert retry.status_code == 409
    assert problem(retry)["type"] == PROBLEMS + "outcome-unknown"
    (record,) = store.list(prefix="http:")
    # The token of the request taken over is kept: its late save may still settle the key.
    assert (record.state, record.token) == ("outcome_unknown", "dead-token")
    assert [e["type"] for e in json.loads(record.data or "{}").get("events", [])] == ["taken_over"]
    assert effects == []


def test_problem_type_base_and_docs_url_shape_every_problem() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects, problem_type_base="https://api.example.com/errors/",
                        docs_url="https://api.example.com/docs/idempotency"))
    response = post(c, "/charges", None)
    assert problem(response)["type"] == "https://api.example.com/errors/key-missing"
    assert response.headers["link"] == '<https://api.example.com/docs/idempotency>; rel="describedby"'


def test_a_stalled_request_taken_over_saves_late_and_later_retries_replay_it(new_store: Any) -> None:
    effects: list[Any] = []
    now = [1_000_000]
    started, release = threading.Event(), threading.Event()

    async def stalled(request: Request) -> Response:
        effects.append("stalled")
        started.set()
        await anyio.to_thread.run_sync(release.wait)
        return JSONResponse({"done": True}, status_code=201)

    store = new_store(lambda: now[0])
    app = Starlette(routes=[Route("/stalled", stalled, methods=["POST"])],
                    middleware=[Middleware(IdempotencyMiddleware, store=store, scope="single-tenant")])
    c = client(app)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(post(c, "/stalled", "k")))
    first.start()
    assert started.wait(10)
    now[0] += 60_000  # past the 30 s lease, which nobody renewed in the store's time
    taken = post(c, "/stalled", "k")
    assert (taken.status_code, problem(taken)["type"]) == (409, PROBLEMS + "outcome-unknown")
    release.set()
    first.join(10)
    assert results[0].status_code == 201
    replay = post(c, "/stalled", "k")
    assert (replay.status_code, replay.json(), replay.headers["idempotent-replayed"]) == (201, {"done": True}, "true")
    (record,) = store.list(prefix="http:")
    events = json.loads(record.data or "{}")["events"]
    assert [(e["type"], e.get("how")) for e in events] == [("taken_over", None), ("resolved", "late_completion")]
    assert effects == ["stalled"]


def test_an_expired_key_runs_again_and_purge_removes_expired_records_in_batches(new_store: Any) -> None:
    effects: list[Any] = []
    now = [1_000_000]
    store = new_store(lambda: now[0])
    app = make_app(store, effects, retention_ms=60_000)
    c = client(app)
    post(c, "/charges", "k")
    now[0] += 59_999
    assert post(c, "/charges", "k").headers["idempotent-replayed"] == "true"
    now[0] += 1
    again = post(c, "/charges", "k")
    assert (again.status_code, "idempotent-replayed" in again.headers) == (201, False)
    for i in range(5):
        post(c, "/charges", f"old-{i}")
    now[0] += 60_000
    middleware = app.build_middleware_stack()
    while not isinstance(middleware, IdempotencyMiddleware):
        middleware = middleware.app
    assert middleware.purge(batch_size=2) == 6
    assert store.list(prefix="http:") == []
    assert len(effects) == 7


def test_a_5xx_the_handler_answered_is_saved_and_replayed(new_store: Any) -> None:
    effects: list[Any] = []

    async def refused(request: Request) -> Response:
        effects.append("refused")
        return JSONResponse({"error": "card declined upstream"}, status_code=502)

    app = Starlette(routes=[Route("/x", refused, methods=["POST"])],
                    middleware=[Middleware(IdempotencyMiddleware, store=new_store(), scope="single-tenant")])
    c = client(app)
    first, again = post(c, "/x", "k"), post(c, "/x", "k")
    assert (first.status_code, again.status_code, again.headers["idempotent-replayed"]) == (502, 502, "true")
    assert again.content == first.content and effects == ["refused"]


class Flaky:
    """A store whose completions fail as told (`fail_completions` times, or their reply lost after being applied),
    and which says when a completion landed."""

    def __init__(self, inner: Any, fail_completions: int = 0, lose_reply: bool = False) -> None:
        self.inner = inner
        self.failures_left = fail_completions
        self.lose_reply = lose_reply
        self.tries = 0
        self.completed = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update(self, key: str, expect: Any, patch: Any) -> Any:
        completion = patch.state == "completed"
        if completion:
            self.tries += 1
            if self.failures_left > 0:
                self.failures_left -= 1
                raise ConnectionError("store down")
        updated = self.inner.update(key, expect, patch)
        if completion and updated is not None:
            self.completed.set()
            if self.lose_reply:
                self.lose_reply = False
                raise ConnectionError("connection reset after the write")
        return updated


@pytest.mark.parametrize("lose_reply", [False, True], ids=["store down", "reply lost"])
def test_a_failed_save_is_retried_in_the_background_so_the_retry_replays(new_store: Any, lose_reply: bool) -> None:
    effects: list[Any] = []
    events = Events()
    store = Flaky(new_store(), 0 if lose_reply else 3, lose_reply)
    # One event loop for every request, as a server has: the save's later tries go on in it.
    with TestClient(make_app(store, effects, on_error=events), raise_server_exceptions=False) as c:
        first = post(c, "/charges", "k")
        assert first.status_code == 201
        assert store.completed.wait(10)
        if lose_reply:
            # The second try finds the first applied: nothing to report, and it stops.
            deadline = time.monotonic() + 20  # only a save that never retries gets here
            while store.tries < 2 and time.monotonic() < deadline:
                store.completed.wait(0.01)
        retry = post(c, "/charges", "k")
    assert (retry.status_code, retry.headers["idempotent-replayed"], retry.content) == (201, "true", first.content)
    assert len(effects) == 1
    assert store.tries == (2 if lose_reply else 4)
    assert events.seen == []


def test_only_the_configured_methods_are_covered() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects, methods=["patch"]))
    assert [post(c, "/charges", "k").status_code for _ in range(2)] == [201, 201]
    patched = [c.patch("/charges", json={"amount": 1}, headers={"idempotency-key": "k"}) for _ in range(2)]
    assert patched[1].headers["idempotent-replayed"] == "true"
    assert len(effects) == 3


def test_a_key_of_exactly_255_printable_characters_is_accepted() -> None:
    effects: list[Any] = []
    c = client(make_app(memory_store(), effects))
    key = "".join(chr(0x20 + i % 95) for i in range(255)).replace(",", ".")
    assert post(c, "/charges", key).status_code == 201
    assert post(c, "/charges", key).headers["idempotent-replayed"] == "true"


def test_with_rerun_after_takeover_a_retry_that_takes_over_runs_the_handler_again(new_store: Any) -> None:
    effects: list[Any] = []
    now = [1_000_000]
    store = new_store(lambda: now[0])
    body = b'{"amount":500}'
    fingerprint = request_fingerprint("POST", "/charges", "application/json", body)
    assert isinstance(fingerprint, str)
    store.claim(store_key("", "k"), ClaimInput(fingerprint, "dead-token", 10, 1000))
    now[0] += 100
    c = client(make_app(store, effects, rerun_after_takeover=True))
    retry = c.post("/charges", content=body, headers={"idempotency-key": "k", "content-type": "application/json"})
    assert retry.status_code == 201
    assert post(c, "/charges", "k").headers["idempotent-replayed"] == "true"
    assert len(effects) == 1


def test_the_lease_is_renewed_while_the_handler_runs(new_store: Any) -> None:
    effects: list[Any] = []
    store = new_store()
    renewed = threading.Event()

    async def long(request: Request) -> Response:
        effects.append("long")
        (record,) = store.list(prefix="http:")
        # Waits on the store itself: the handler returns once its lease was seen moving, however long that takes.
        def watch() -> None:
            deadline = time.monotonic() + 20  # only a broken renewal gets here
            while not renewed.is_set() and time.monotonic() < deadline:
                (now,) = store.list(prefix="http:")
                if now.lease_until != record.lease_until:
                    renewed.set()
                else:
                    renewed.wait(0.02)
        await anyio.to_thread.run_sync(watch)
        return JSONResponse({"done": True}, status_code=201)

    app = Starlette(routes=[Route("/long", long, methods=["POST"])],
                    middleware=[Middleware(IdempotencyMiddleware, store=store, scope="single-tenant", lease_ms=150)])
    c = client(app)
    assert post(c, "/long", "k").status_code == 201
    assert renewed.is_set()
    assert post(c, "/long", "k").headers["idempotent-replayed"] == "true"
    assert effects == ["long"]


def test_a_client_gone_before_its_body_arrived_claims_nothing_and_runs_nothing() -> None:
    import asyncio

    effects: list[Any] = []
    store = memory_store()
    middleware = IdempotencyMiddleware(make_app(store, effects), store=store, scope="single-tenant")
    messages = [{"type": "http.request", "body": b'{"amount":', "more_body": True}, {"type": "http.disconnect"}]
    sent: list[Any] = []

    async def receive() -> Any:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/charges", "raw_path": b"/charges", "query_string": b"",
             "headers": [(b"idempotency-key", b"k"), (b"content-type", b"application/json")]}
    asyncio.run(middleware(scope, receive, send))
    assert (sent, effects, store.list()) == ([], [], [])


def test_end_to_end_over_loopback_under_uvicorn_with_a_streamed_response(tmp_path: Any) -> None:
    import httpx
    import uvicorn

    from idemkey import sqlite_store

    effects: list[Any] = []
    store = sqlite_store(str(tmp_path / "owner.db"))
    config = uvicorn.Config(make_app(store, effects), host="127.0.0.1", port=0, log_level="critical",
                            lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started
        port = server.servers[0].sockets[0].getsockname()[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            first = http.post("/stream?size=1000", json={}, headers={"idempotency-key": "k"})
            # The last chunk is held until the save's first try: a client that has its answer finds it saved.
            again = http.post("/stream?size=1000", json={}, headers={"idempotency-key": "k"})
            charged = http.post("/charges", json={"amount": 5}, headers={"idempotency-key": "c"})
            replayed = http.post("/charges", json={"amount": 5}, headers={"idempotency-key": "c"})
    finally:
        server.should_exit = True
        thread.join(20)
        store.close()
    assert first.status_code == 200 and len(first.content) == len("".join(f"chunk {i}\n" for i in range(1000)))
    assert (again.content, again.headers["idempotent-replayed"]) == (first.content, "true")
    assert (replayed.content, replayed.headers["location"]) == (charged.content, "/charges/2")
    assert int(replayed.headers["content-length"]) == len(replayed.content)
    assert effects == ["stream", {"amount": 5}]


def test_the_last_chunk_of_a_response_waits_for_the_save_so_a_client_with_its_answer_finds_it_saved() -> None:
    effects: list[Any] = []
    saving, release = threading.Event(), threading.Event()

    class SlowSave(Flaky):
        def update(self, key: str, expect: Any, patch: Any) -> Any:
            if patch.state == "completed":
                saving.set()
                release.wait(20)
            return self.inner.update(key, expect, patch)

    store = SlowSave(memory_store())
    c = client(make_app(store, effects))
    done = threading.Event()
    results: list[Any] = []

    def request() -> None:
        results.append(post(c, "/stream?size=3", "k"))
        done.set()

    thread = threading.Thread(target=request)
    thread.start()
    assert saving.wait(20)
    # While the save is held up, the client has not had the end of its response (a slow machine can only make
    # this pass, never fail, when the last chunk is held as it should be).
    assert not done.wait(0.3)
    release.set()
    thread.join(20)
    assert results[0].text == "chunk 0\nchunk 1\nchunk 2\n"
    assert post(c, "/stream?size=3", "k").headers["idempotent-replayed"] == "true"


def test_a_key_lookup_answers_what_the_server_knows_of_the_key_in_the_callers_scope_only(new_store: Any) -> None:
    effects: list[Any] = []
    store = new_store()
    started, release = threading.Event(), threading.Event()

    async def slow(request: Request) -> Response:
        started.set()
        await anyio.to_thread.run_sync(release.wait)
        return JSONResponse({"done": True}, status_code=201)

    app = make_app(store, effects, lookup="/v1/idempotency-keys",
                   scope=lambda s: dict(s["headers"]).get(b"x-account", b"").decode())
    app.add_route("/slow", slow, methods=["POST"])
    c = client(app)

    def look(key: str | None, account: str = "a") -> Any:
        headers = {"x-account": account} | ({} if key is None else {"idempotency-key": key})
        return c.get("/v1/idempotency-keys", headers=headers)

    post(c, "/charges", "done", headers={"x-account": "a"})
    post(c, "/boom", "threw", headers={"x-account": "a"})
    running = threading.Thread(target=lambda: post(c, "/slow", "running", headers={"x-account": "a"}))
    running.start()
    assert started.wait(10)
    answers = {key: look(key).json() for key in ("done", "threw", "running", "never")}
    release.set()
    running.join(10)
    assert answers == {
        "done": {"key": "done", "state": "completed", "status": 201, "body": '{"charge":1,"amount":500}',
                 "contentType": "application/json"},
        "threw": {"key": "threw", "state": "outcome_unknown"},
        "running": {"key": "running", "state": "in_flight"},
        "never": {"key": "never", "state": "unknown"},
    }
    answer = look("done", account="b")
    assert (answer.json(), answer.headers["cache-control"]) == ({"key": "done", "state": "unknown"}, "no-store")
    assert problem(look(None))["type"] == PROBLEMS + "key-missing"
    with pytest.raises(TypeError, match="lookup must be a path"):
        IdempotencyMiddleware(app, store=store, scope="single-tenant", lookup="/x?y")


def test_a_burst_of_the_same_request_runs_the_handler_once(new_store: Any) -> None:
    effects: list[Any] = []
    with TestClient(make_app(new_store(), effects), raise_server_exceptions=False) as c:
        barrier = threading.Barrier(12)
        answers: list[Any] = []

        def one() -> None:
            barrier.wait(10)
            answers.append(post(c, "/charges", "burst"))

        threads = [threading.Thread(target=one) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    fresh = [a for a in answers if a.status_code == 201 and "idempotent-replayed" not in a.headers]
    assert len(answers) == 12 and len(fresh) == 1
    assert all(a.status_code == 409 or a.content == fresh[0].content for a in answers)
    assert len(effects) == 1
