/*
 * A harness worker running one `harness.call` of a tool (src/harness/settle.ts settle, src/harness/hold.ts hold) on
 * the key under test, on the claim layer (src/claim/claim.ts claimKey, src/claim/hold.ts holdClaim). The tool is
 * `unguarded` (the effect counts at an owner that does not dedupe) or, with -DKEYED, `keyed` (the owner dedupes on
 * the key). A crash may strike before any step; the call is then replayed by a new process (`goto look`, a new
 * token), as the chaos suite's workers do. With -DPYTHON, the Python harness (python/idemkey/harness.py), whose only
 * step that differs is the completion that matches nothing: it ends there, with no late completion
 * (docs/claim-protocol.md, "The same steps in Python").
 */

/* The keyed owner's own record of the key (it dedupes on it; its retention outlives the ledger's). */
bit ownerSeen;
byte ownerRes;

proctype Worker(byte me) {
  mtype rc;
  byte tk, ratt, rst, result;
look:
  atomic { newToken() };
  /* A claim answered `exists` stored nothing, so the next look may send the same token (as good as a fresh one). */
again:
  /* settle: claimKey -> store.claim */
  rpc(CLAIM, 0);
  atomic {
    if
    :: rc == ERR -> FORGET; goto storeError
    :: rc == CLAIMED -> FORGET; goto held
#ifdef KEYED
    :: rc == TAKEN -> FORGET; goto held                 /* takeOver: a keyed tool runs again, with the same key */
#else
    :: rc == TAKEN && ratt == 0 -> FORGET; goto held    /* takeOver: the process died before its started mark */
    :: rc == TAKEN && ratt > 0 -> FORGET; goto unknown  /* takeOver: it may have run; no reconcile in the model */
#endif
    :: rc == EXISTS && rst == PENDING -> FORGET; goto wait  /* settle's wait loop: pause, then look again */
    :: rc == EXISTS && rst != PENDING -> FORGET; goto done  /* a replay (P5, in the step) or OutcomeUnknownError */
    fi
  };
wait:
  pause();                                             /* for ever, if need be: P7 shows the wait ends */
  goto again;
held:
#ifndef KEYED
  crash(0);
  /* attempts: mark(call, held, attempt), hold.write({attempts}), before an unguarded attempt runs */
  rpc(MARK, 0);
  atomic {
    if
    :: rc == NOMATCH -> FORGET; goto look               /* ClaimLost: look at the ledger anew */
    :: rc == ERR -> FORGET; goto done                   /* StoreError: nothing ran; the claim lapses */
    :: rc == OK -> FORGET
    fi
  };
#endif
  renewals();
  if
  :: atomic { crashes > 0 -> crashes--; inflight--; printf("caller %d crashes before its effect\n", me) };
     goto look
  :: skip
  fi;
  /* tool.run: the effect */
  atomic {
#ifdef KEYED
    if
    :: !ownerSeen -> ownerSeen = 1; ownerRes = me + 1; effects++
    :: else -> skip
    fi;
    result = ownerRes;
#else
    effects++;
    result = me + 1;
#endif
    printf("caller %d token %d: EFFECT (%d this generation)\n", me, tk, effects);
    /* P1: an unguarded effect happens at most once per key (keyed: the owner's effect, once). */
    assert(effects <= 1);
    inflight--; ranRes = result; crashedAfter = 0; ranTok = tk; takenAfter = (tok != tk)
  };
  renewals();
  crash(1);
save:
  /* complete -> writeCompletion -> hold.save({state: completed, result, ...}) */
  rpc(COMPLETE, result);
  atomic {
    if
    :: rc == OK -> FORGET; goto done
#ifdef PYTHON
    :: rc == NOMATCH -> FORGET; goto done               /* the Python harness: no late completion (_save, _complete) */
#else
    :: rc == NOMATCH -> FORGET; goto late
#endif
    :: rc == ERR -> FORGET
    fi
  };
#ifdef MUTANT_SAVE_ONCE
  goto done;                                           /* today: tried a few times at once, the lease stopped */
#else
  renewals(); crash(1); goto save;                     /* the save-retry rule: retried while renewal runs */
#endif
late:
  /* writeCompletion: the claim was lost; if the taker recorded the outcome unknown, record the result after all */
  rpc(LATE, result);
  goto done;
unknown:
  /* markUnknown: hold.write({state: outcome_unknown}), then OutcomeUnknownError */
  rpc(MARK_UNKNOWN, 0);
  goto done;
storeError:
  /* harness.call rejects with StoreError; the agent may replay the call */
  if
  :: atomic { crashes > 0 -> crashes-- }; goto look
  :: goto done
  fi;
done:
  finished++
}
