/*
 * idemkey's claim protocol (docs/claim-protocol.md), model-checked with spin: see the README, "How we know it happens
 * once", and scripts/model.mjs, which runs every configuration and mutant. One configuration per run, chosen with -D:
 *   -DHARNESS (default)  WORKERS harness workers calling one unguarded tool on one key; -DKEYED: a keyed tool
 *   -DMIDDLEWARE         REQUESTS requests with one Idempotency-Key through the middleware
 *   -DHARNESS -DPYTHON   the Python harness's workers (no late completion), unguarded or, with -DKEYED, keyed
 * Bounds: FAULTS misbehaving commands, CRASHES crashes or replays; lease L and retention T ticks. Time itself is
 * unbounded (store.pml). Mutants (today's behaviours, each must yield a counterexample): MUTANT_RESEND,
 * MUTANT_SAVE_ONCE, MUTANT_SKEW, MUTANT_RENEW, MUTANT_MW_RERUN.
 *
 * Keys are independent: every store step reads and writes one record, so a second key adds only interleavings that
 * commute with these; the harness ledger and the middleware keep separate records (src/owner/engine.ts storeKey),
 * which is why each configuration models one key.
 */

#ifndef L
#define L 2
#endif
#ifndef T
#define T 3
#endif
#ifndef FAULTS
#define FAULTS 2
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef WORKERS
#define WORKERS 2
#endif
#ifndef REQUESTS
#define REQUESTS 2
#endif
#ifdef MUTANT_SKEW
#ifndef SKEW
#define SKEW 1
#endif
#else
#undef SKEW
#define SKEW 0
#endif
#ifdef MIDDLEWARE
#define CALLERS REQUESTS
#else
#define CALLERS WORKERS
#endif

/* Record states (src/store/types.ts RecordState). */
#define NONE 0
#define PENDING 1
#define COMPLETED 2
#define UNKNOWN 3

/* Store operations and their answers (mtype, so that a trail prints their names). */
mtype = { CLAIM, RENEW, MARK, COMPLETE, LATE, SETTLE, MARK_UNKNOWN };
mtype = { CLAIMED, TAKEN, EXISTS, OK, NOMATCH, ERR };

/* Ghosts: what the properties count, per generation of the key (reset when its retention ends). */
byte effects;       /* effects at the owner (unguarded tool, the keyed owner, the middleware's handler) */
byte first;         /* the first result recorded */
byte ranRes;        /* the result of the last effect */
bit crashedAfter;   /* its process crashed after the effect */
bit takenAfter;     /* the claim of the effect's holder was taken over */
byte ranTok;        /* the token of the effect's holder */
byte inflight;      /* callers between the answer that starts their effect and the effect */
byte crashes = CRASHES;
byte finished;      /* callers that ended */

#if defined(MUTANT_SKEW) || defined(MUTANT_RENEW)
/* The spec's expiresAt (the fixed protocol on the store's clock), kept beside the mutant's. */
byte gexp;
#define SPEC_SET(x) gexp = x
#define SPEC_MAX(x) gexp = MAX(gexp, x)
#define SPEC_CLEAR gexp = 0
#define DOWN_SPEC DOWN(gexp)
#else
/* The real model's expiry is the spec's. */
#define gexp exp
#define SPEC_SET(x) skip
#define SPEC_MAX(x) skip
#define SPEC_CLEAR skip
#define DOWN_SPEC skip
#endif
#define SPEC_GONE (gexp <= TRUE_OFF)
#define SPEC_ENDED (gexp <= TRUE_OFF)

/*
 * Which answer lets a caller start its effect: the started mark (unguarded tool), the claim (keyed tool; the
 * middleware, whose takeover starts the handler only with rerunAfterTakeover, MUTANT_MW_RERUN).
 */
#if defined(MIDDLEWARE) && defined(MUTANT_MW_RERUN) || !defined(MIDDLEWARE) && defined(KEYED)
#define STARTED(op) (op == CLAIM && (rc == CLAIMED || rc == TAKEN))
#elif defined(MIDDLEWARE)
#define STARTED(op) (op == CLAIM && rc == CLAIMED)
#else
#define STARTED(op) (op == MARK && rc == OK)
#endif

#include "store.pml"
#include "net.pml"
#include "clock.pml"

/* A crash before this step kills the process; each is followed by a replay of the call (a new process). */
inline crash(after) {
  if
  :: atomic { crashes > 0 -> crashes--; crashedAfter = (after -> 1 : crashedAfter); printf("caller %d crashes\n", me) };
     goto look
  :: skip
  fi
}

/*
 * A new token (randomUUID): none that the record, the delayed command or the ghosts still hold, so never one seen
 * before where it matters; the smallest such, so that states differing only in token names are one.
 */
inline newToken() {
  tk = me * 4 + 1;
  do
  :: tk == tok || tk == ltk || tk == ranTok -> tk++
  :: else -> break
  od
}

/* A reply read: forgotten, so that states differing only in it are one. */
#define FORGET rc = 0; ratt = 0; rst = 0

/*
 * holdClaim's renewal timer (every leaseMs / 3): between two steps of the holder, at most one renewal, and at most one
 * per tick. More would only add runs where the lease lives longer; a holder that stalls past its lease is explored.
 */
inline renewals() {
  if
  :: !thisTick[me] -> thisTick[me] = 1; rpc(RENEW, 0); rc = 0
  :: skip
  fi
}

/* The pause before looking again (settle's pause; the client's Retry-After): until the next tick. */
inline pause() {
  thisTick[me] = 1; (!thisTick[me])
}

#ifdef MIDDLEWARE
#include "middleware.pml"
#else
#include "harness.pml"
#endif

init {
  byte i;
  atomic {
    for (i : 0 .. CALLERS - 1) {
#ifdef MIDDLEWARE
      run Request(i)
#else
      run Worker(i)
#endif
    }
    i = 0
  }
}

/*
 * P6, when every caller has ended: an effect whose process lived on is recorded with its result (the write that must
 * happen, happens, once the store answers again), unless the claim of its holder was taken over (the taker then
 * records the outcome unknown, a documented answer) or the key's retention ended.
 */
active proctype Ended() {
  (finished == CALLERS);
  assert(ranRes == 0 || crashedAfter || takenAfter || SPEC_GONE || (st == COMPLETED && res == ranRes))
}

/* P7: with the store eventually available and weak fairness, every call ends. */
ltl ends { <> (finished == CALLERS) }
