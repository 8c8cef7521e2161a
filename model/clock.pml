/*
 * The store's clock, one tick at a time, for ever: there is no horizon, since the record's times are relative
 * (store.pml). A tick lowers each time field; a record whose expiresAt has passed for every caller's clock is gone
 * (Redis PEXPIRE, store.purge(); the steps already treat it as absent). When the spec's retention of the key ends,
 * its generation ends too, and the per-key counts start again.
 *
 * Assumption (documented in the README): no caller stalls between the answer that starts its effect (the started
 * mark; the claim, for the middleware and keyed tools) and the effect for longer than the retention: the clock does
 * not pass the spec's expiry while such a caller is in flight. Stalls longer than the lease are explored: that is
 * what takeovers are for.
 */

/* Per caller: it renewed, or looked at the record, during this tick (holdClaim renews once per leaseMs / 3). */
bit thisTick[CALLERS];

#ifdef FAST
#define HOLDING_OK (holding == 0 || lease > 1)
#else
#define HOLDING_OK true
#endif

#define DOWN(x) x = (x > 0 -> x - 1 : 0)

active proctype Clock() {
  byte i;
end_clock:
  do
  :: atomic {
       (inflight == 0 || gexp > TRUE_OFF + 1) && HOLDING_OK ->
       printf("tick\n");
       DOWN(lease); DOWN(exp); DOWN_SPEC;
       if
       :: st != NONE && exp == 0 -> wipe()
       :: else -> skip
       fi;
       /* The generation ends when the spec's record and the store's are both gone (they differ only in mutants). */
       if
       :: SPEC_ENDED && st == NONE && (effects > 0 || first > 0 || ranTok > 0) ->
         printf("the key's retention ends\n");
         effects = 0; first = 0; ranRes = 0; crashedAfter = 0; takenAfter = 0; ranTok = 0; SPEC_CLEAR
       :: else -> skip
       fi;
       for (i : 0 .. CALLERS - 1) { thisTick[i] = 0 }
       i = 0
     }
  od
}
