"""One request's hold on its key in the ASGI middleware (the TypeScript claim layer's ``Hold`` with the middleware's
``Lock``, src/claim/hold.ts and src/owner/lock.ts): it renews the lease while the handler runs, then saves the
response, releases the key or records it outcome unknown, exactly once, by the rule of docs/integration-contract.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from .errors import LeaseLostError, ResponseTooLargeError
from .owner import OwnerResponse, encode_not_saved, encode_saved, with_owner_event
from .store import Expect, Patch, StoreRecord, now_ms

_FIRST_BACKOFF_MS = 50


@dataclass(frozen=True)
class SaveOutcome:
    """What the handler produced, as the ``save`` hook sees it."""

    status: int
    threw: bool
    error: BaseException | None
    no_effect: bool


@dataclass(frozen=True)
class HoldOptions:
    """What a hold needs of the middleware's resolved options."""

    call: Callable[..., Awaitable[Any]]
    """``call(method, *args)``: the store's method, run in a worker thread."""
    report: Callable[[str, BaseException, str, str], None]
    """``report(phase, error, scope, key)``: to ``on_error``."""
    lease_ms: int
    retention_ms: int
    save_retry_ms: int
    max_response_bytes: int
    rerun_after_takeover: bool
    save: Callable[[SaveOutcome], bool | None] | None
    background: set[asyncio.Task[Any]]
    """Saves still retrying after their first try: referenced, so that they are not collected mid-way."""


def settle(said: bool | None, outcome: SaveOutcome) -> str:
    """``save``, ``release`` or ``unknown``: the hook's word, else the rule that only the handler can say that nothing
    happened (docs/integration-contract.md)."""
    if said is not None:
        return "save" if said else "release"
    return "release" if outcome.no_effect else "unknown" if outcome.threw else "save"


class OwnerHold:
    """One request's hold on its key (the TypeScript claim layer's ``Hold`` and the middleware's ``Lock``): renews
    the lease while the handler runs, then saves, releases or marks the key unknown, exactly once."""

    def __init__(self, options: HoldOptions, record_key: str, token: str, fingerprint: str, scope: str,
                 key: str) -> None:
        self.o = options
        self.record_key = record_key
        self.token = token
        self.fingerprint = fingerprint
        self.scope = scope
        self.key = key
        self.expect = Expect(token=token, state="pending")
        self.renewal: asyncio.Task[None] | None = None
        self.lost = False
        self.finished = False

    def start(self) -> None:
        self.renewal = asyncio.create_task(self._renew())

    def stop(self) -> None:
        if self.renewal is not None:
            self.renewal.cancel()
            self.renewal = None

    async def _renew(self) -> None:
        o = self.o
        while True:
            await asyncio.sleep(o.lease_ms / 3000)
            try:
                renewed = await o.call("update", self.record_key, self.expect,
                                        Patch(lease_ms=o.lease_ms, ttl_ms=o.lease_ms + o.retention_ms))
            except Exception as error:
                # The store is down: the next renewal may still come before the lease runs out.
                o.report("renew", error, self.scope, self.key)
                continue
            if renewed is None:
                self.lost = True
                o.report("renew", LeaseLostError(self.key), self.scope, self.key)
                return

    async def mark_unknown(self, taken_from: StoreRecord | None = None) -> None:
        o = self.o
        if taken_from is None:
            patch = Patch(state="outcome_unknown", token=None, lease_ms=None, ttl_ms=o.retention_ms)
        else:
            event = {"type": "taken_over", "at": now_ms()}
            patch = Patch(state="outcome_unknown", token=taken_from.token, lease_ms=None, ttl_ms=o.retention_ms,
                          data=with_owner_event(taken_from.data, event))
        try:
            await o.call("update", self.record_key, self.expect, patch)
        except Exception as error:
            # Left pending: it lapses with its lease, and the retry that takes it over gets the same answer.
            o.report("save", error, self.scope, self.key)
        finally:
            self.stop()

    async def finish(self, status: int, headers: list[tuple[str, str]], body: bytes | None, threw: bool,
                     error: BaseException | None, marked: bool) -> None:
        if self.finished:
            return
        self.finished = True
        o = self.o
        outcome = SaveOutcome(status, threw, error,
                              marked or (threw and getattr(error, "no_effect", None) is True))
        said = None
        if o.save is not None:
            try:
                said = o.save(outcome)
            except Exception as hook_error:
                o.report("save", hook_error, self.scope, self.key)
        settled = settle(said, outcome)
        if settled == "release":
            self.stop()
            try:
                await o.call("delete", self.record_key, self.expect)
            except Exception as release_error:
                # The key stays blocked until its lease runs out; then a retry takes it over.
                o.report("release", release_error, self.scope, self.key)
            return
        if settled == "unknown":
            await self.mark_unknown()
            return
        if body is None:
            # The effect happened: the key is marked done without a response rather than released.
            await self._complete(encode_not_saved(status, "too_large"))
            o.report("save", ResponseTooLargeError(self.key, status, o.max_response_bytes), self.scope, self.key)
            return
        await self._complete(encode_saved(OwnerResponse(status, headers, body)))

    async def _complete(self, result: str) -> None:
        """The save-retry rule: the response waits for the first try only; later tries go on in the background, with
        backoff and the lease renewed, for ``save_retry_ms``."""
        answered = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._save(result, answered))
        self.o.background.add(task)
        task.add_done_callback(self.o.background.discard)
        await asyncio.shield(answered)

    async def _save(self, result: str, answered: asyncio.Future[None]) -> None:
        o = self.o
        patch = Patch(state="completed", token=None, lease_ms=None, result=result, ttl_ms=o.retention_ms)
        expect = self.expect
        waited, delay, failed = 0, _FIRST_BACKOFF_MS, False

        def answer() -> None:
            if not answered.done():
                answered.set_result(None)

        try:
            while True:
                why: BaseException | None = None
                try:
                    saved = await o.call("update", self.record_key, expect, patch)
                    if saved is not None:
                        return
                    now = await o.call("get", self.record_key)
                    if failed and now is not None and now.state == "completed" and now.result == result:
                        return  # an earlier try was applied, its reply lost
                    late = (not o.rerun_after_takeover and expect is self.expect and now is not None
                            and now.state == "outcome_unknown" and now.token == self.token)
                    if late:
                        # Taken over and recorded unknown under this token: this save settles it (a late save).
                        expect = Expect(token=self.token, state="outcome_unknown")
                        event = {"type": "resolved", "at": now_ms(), "how": "late_completion"}
                        patch = Patch(state="completed", token=None, lease_ms=None, result=result,
                                      ttl_ms=o.retention_ms, data=with_owner_event(now.data, event))
                        continue
                    busy = (not o.rerun_after_takeover and expect is self.expect and now is not None and now.state == "pending"
                            and now.fingerprint == self.fingerprint and now.token != self.token)
                    if not busy:
                        if not self.lost:
                            o.report("save", LeaseLostError(self.key), self.scope, self.key)
                        return
                    # A taker that has not recorded the outcome unknown yet: wait for it, within the budget.
                except Exception as error:
                    failed, why = True, error
                if waited >= o.save_retry_ms:
                    # Given up: the key stays locked (pending), so a retry after the lease gets outcome-unknown.
                    if why is not None:
                        o.report("save", why, self.scope, self.key)
                    return
                answer()
                pause = min(delay, o.save_retry_ms - waited)
                await asyncio.sleep(pause / 1000)
                waited += pause
                delay = min(delay * 2, max(_FIRST_BACKOFF_MS, o.lease_ms // 3))
        finally:
            self.stop()
            answer()
