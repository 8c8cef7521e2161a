/*
 * A request with an Idempotency-Key through the middleware (src/owner/engine.ts begin, src/owner/lock.ts finish) on
 * the claim layer. The handler's effect is counted; a second request with the same key is the client's retry, and a
 * crash is followed by the client's retry on another process.
 */

proctype Request(byte me) {
  mtype rc;
  byte tk, ratt, rst, ptk;
  bit waited;
look:
  atomic { newToken() };
again:
  /* begin: claimKey -> store.claim */
  rpc(CLAIM, 0);
  atomic {
    if
    :: rc == ERR -> FORGET; goto unavailable             /* 503 store-unavailable */
    :: rc == CLAIMED -> FORGET; goto held
#ifdef MUTANT_MW_RERUN
    :: rc == TAKEN -> FORGET; goto held                  /* today, or rerunAfterTakeover: true */
#else
    :: rc == TAKEN -> ptk = rst; FORGET; goto unknown    /* the handler may have run: 409 outcome-unknown */
#endif
    :: rc == EXISTS && rst == PENDING -> FORGET; goto wait   /* 409 key-in-flight, Retry-After */
    :: rc == EXISTS && rst != PENDING -> FORGET; goto done   /* a replay (P5, in the step), or 409 outcome-unknown */
    fi
  };
wait:
  /* the client retries after Retry-After, until it gives up */
  pause();
  goto again;
held:
  renewals();
  if
  :: atomic { crashes > 0 -> crashes--; inflight--; printf("caller %d crashes before its handler\n", me) };
     goto look
  :: skip
  fi;
  /* the handler */
  atomic {
    effects++;
    printf("caller %d token %d: HANDLER (%d this generation)\n", me, tk, effects);
    /* P2: the handler runs at most once per key (without rerunAfterTakeover). */
    assert(effects <= 1);
    inflight--; ranRes = me + 1; crashedAfter = 0; ranTok = tk; takenAfter = (tok != tk)
  };
  renewals();
  crash(1);
save:
  /* finish -> hold.save({state: completed, result: the saved response}) */
  rpc(COMPLETE, me + 1);
  atomic {
    if
    :: rc == OK -> FORGET; goto done                     /* saved */
    :: rc == NOMATCH -> FORGET; goto late                /* the claim was lost */
    :: rc == ERR -> FORGET
    fi
  };
#ifdef MUTANT_SAVE_ONCE
  goto done;                                           /* today: tried once, onError, the record left pending */
#else
  renewals(); crash(1); goto save;
#endif
late:
  /* hold.save's `late`: over the outcome_unknown record its taker left under this token; retried on store errors,
     and waited for once (a pause) while the taker has not marked it yet */
  rpc(SETTLE, me + 1);
  atomic {
    if
    :: rc == OK -> FORGET; goto done                     /* settled late */
    :: rc == NOMATCH && !waited -> FORGET; waited = 1
    :: rc == NOMATCH -> FORGET; goto done                /* nothing to settle (onError phase "save") */
    :: rc == ERR -> FORGET
    fi
  };
  pause();
  goto late;
unknown:
  /* the taker's mark keeps the token it took over (unknownAfterTakeover) */
  rpc(MARK_UNKNOWN, ptk);
  ptk = 0;
  goto done;
unavailable:
  if
  :: atomic { crashes > 0 -> crashes-- }; goto look
  :: goto done
  fi;
done:
  finished++
}
