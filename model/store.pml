/*
 * The store: one record (the key under test) and the atomic steps the stores perform on it. Each `step` runs inside
 * one `atomic` of the caller, as the real store runs it: one Lua script (src/redis/scripts.ts), one SQL statement
 * (src/postgres/store.ts), one BEGIN IMMEDIATE transaction (src/sqlite/store.ts), one synchronous call (memory).
 *
 * Time is the store's clock (PostgreSQL clock_timestamp(), Redis TIME), in ticks. The record keeps its times
 * relative to the clock, so that the model needs no horizon: a time field r stands for the instant now + r - SKEW,
 * and each tick lowers it (clock.pml), down to 0 ("long past"). A caller's clock runs o(p) - SKEW ticks off the
 * store's; without MUTANT_SKEW, SKEW is 0 and every step reads the store's clock, as docs/claim-protocol.md says.
 */

/* The record's fields (src/store/types.ts StoreRecord); st == NONE is an absent record. `fresh` is
   createdAt == updatedAt, which the resend rule reads. `res` names the result (the caller whose effect it is). */
byte st, tok, lease, exp, att, res;
bit fresh;

#ifdef MUTANT_SKEW
/* Today's stores read Date.now() of the caller: caller 0's runs SKEW ticks behind, caller 1's SKEW ahead. */
#define OFF(p) (p == 0 -> 0 : (p == 1 -> 2 * SKEW : SKEW))
#else
#define OFF(p) SKEW
#endif
/* The store's own clock, for what the spec (the fixed protocol) decides. */
#define TRUE_OFF SKEW

#define MAX(a, b) ((a) > (b) -> (a) : (b))

/* P8: a pending record never expires while its lease is held (renewal moves expiresAt with leaseUntil). */
#ifdef NO_P8
#define P8 skip
#else
#define P8 assert(st != PENDING || lease <= exp)
#endif

inline wipe() {
  st = NONE; tok = 0; lease = 0; exp = 0; att = 0; res = 0; fresh = 0
}

hidden byte o;

/* One atomic store operation `op` by caller `p` with token `tk`; answers in the caller's rc, ratt, rst. */
inline step(op, tk, p, arg) {
  o = OFF(p);
  if
  :: op == CLAIM ->
    /* store.claim (src/store/record.ts decideClaim; Redis CLAIM script; PostgreSQL WITH ... ON CONFLICT statement) */
    if
    :: st == NONE || exp <= o ->
      /* No live record: create it (expiresAt = now + max(ttlMs, leaseMs), src/claim/claim.ts claimKey). */
      /* P4: a record it replaces has reached the end of its retention on the store's clock. */
      assert(SPEC_GONE);
      st = PENDING; tok = tk; lease = o + L; exp = o + T; att = 0; res = 0; fresh = 1;
      SPEC_SET(TRUE_OFF + T);
      rc = CLAIMED
    :: else ->
      if
      :: st == PENDING && tok == tk ->
        /* The same claim arriving twice (ioredis autoResendUnfulfilledCommands): the resend rule of
           docs/claim-protocol.md answers what the first arrival decided, read from the record itself. */
#ifdef MUTANT_RESEND
        /* Today's CLAIM script: "same token: our own claim" answers claimed, whatever the first arrival did. */
        rc = CLAIMED
#else
        if
        :: fresh -> rc = CLAIMED
        :: else -> rc = TAKEN; ratt = att; rst = tok   /* previous: the record as it stands, this very token */
        fi
#endif
      :: st == PENDING && tok != tk && lease <= o ->
        /* A lapsed lease, same fingerprint: taken over with a new token and lease, attempts (the started mark)
           kept. If it was the claim of the effect's holder, P6 allows the taker's outcome_unknown. */
        if :: ranTok != 0 && tok == ranTok -> takenAfter = 1 :: else -> skip fi;
        /* rst: the token taken over (claim.previous.token), which the middleware's mark keeps. */
        ratt = att; rst = tok; tok = tk; lease = o + L; exp = MAX(exp, o + T); fresh = 0;
        SPEC_MAX(TRUE_OFF + T);
        rc = TAKEN
      :: else ->
        /* exists: the caller replays it, waits, or refuses. P5: a replay returns the first result. */
        assert(st != COMPLETED || res == first);
        rst = st; rc = EXISTS
      fi
    fi
  :: op == RENEW || op == MARK ->
    /* RENEW: holdClaim's renewal, update(key, {token, pending}, {leaseMs, ttlMs}) every leaseMs / 3.
       MARK: the started mark of an unguarded attempt, hold.write({attempts}) (src/harness/hold.ts mark). */
    if
    :: st == PENDING && exp > o && tok == tk ->
      if
      :: op == RENEW ->
        lease = o + L;
#ifndef MUTANT_RENEW
        exp = o + T;
#endif
        SPEC_SET(TRUE_OFF + T)
      :: else -> att = 1
      fi;
      fresh = 0; rc = OK
    :: else -> rc = NOMATCH
    fi
  :: op == COMPLETE || op == LATE || op == SETTLE ->
    /* COMPLETE: hold.save, update(key, {token, pending}, {state: completed, result, token: null, ttlMs}).
       LATE: the harness's late completion (writeCompletion), update(key, {state: outcome_unknown}, completed).
       SETTLE: the owner's late save (hold.save's `late`), update(key, {token, outcome_unknown}, completed). */
    if
    :: st != NONE && exp > o && ((op == COMPLETE && st == PENDING && tok == tk) || (op == LATE && st == UNKNOWN) ||
                                 (op == SETTLE && st == UNKNOWN && tok == tk)) ->
      /* P4: a generation's completed result is never replaced by another. */
      assert(first == 0 || first == arg);
      /* P9: a late save settles only the outcome of the attempt that ran: its token is the effect holder's. */
      assert(op != SETTLE || tk == ranTok);
      first = arg;
      st = COMPLETED; tok = 0; lease = 0; res = arg; exp = o + T; fresh = 0;
      SPEC_SET(TRUE_OFF + T);
      rc = OK
    :: else -> rc = NOMATCH
    fi
  :: op == MARK_UNKNOWN ->
    /* markUnknown (harness), the middleware's 409 outcome-unknown: hold.write({state: outcome_unknown, token: arg}),
       arg 0 (null) but for the middleware's takeover, which keeps the token it took over (unknownAfterTakeover). */
    if
    :: st == PENDING && exp > o && tok == tk -> st = UNKNOWN; tok = arg; lease = 0; fresh = 0; rc = OK
    :: else -> rc = NOMATCH
    fi
  fi;
  P8;
  o = 0
}
