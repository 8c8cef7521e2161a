/*
 * The network between a caller and the store. Each command may be answered; lost before it reaches the store; run
 * with its reply lost (the caller sees a StoreError); run, its reply lost, and resent on reconnect (ioredis's
 * autoResendUnfulfilledCommands: the second run's reply arrives); or delayed past the caller's timeout and run later,
 * by the Late process, at any point. `faults` bounds how many commands misbehave in one run: the store is eventually
 * available again.
 */

byte faults = FAULTS;

/* The one delayed command in flight, if any. */
mtype lop;
byte ltk, lp, larg;

/* What a trail prints for each command: who, what, the answer, and the record after it. */
#define SHOW(how) printf("caller %d token %d %e", me, tk, op); printf(how); \
  printf(": %e; record st=%d tok=%d lease=%d exp=%d att=%d res=%d\n", rc, st, tok, lease, exp, att, res)

/*
 * A reply that lets the caller start its effect (STARTED, defined by each caller) puts it in flight in the same
 * atomic step, so that the clock's stall assumption (clock.pml) covers the whole span from the store's answer on.
 */
#define STARTS(op) if :: STARTED(op) -> inflight++ :: else -> skip fi

/*
 * FAST (the liveness runs): a caller answered claimed or taken over sends its next command before its lease lapses.
 * Without it, two workers that always stall a whole lease between a claim and their started mark take the key from
 * each other for ever (spin finds that cycle): a run weak fairness does not rule out and no real process takes.
 */
#ifdef FAST
bit claimedLast[CALLERS];
byte holding;
#define NEXT if :: claimedLast[me] -> claimedLast[me] = 0; holding-- :: else -> skip fi
#define GOT(op) if :: op == CLAIM && (rc == CLAIMED || rc == TAKEN) -> claimedLast[me] = 1; holding++ :: else -> skip fi
#else
#define NEXT skip
#define GOT(op) skip
#endif

inline rpc(op, arg) {
  if
  :: atomic { NEXT; step(op, tk, me, arg); STARTS(op); GOT(op); SHOW("") }
  :: atomic { faults > 0 -> NEXT; faults--; rc = ERR; SHOW(" (lost on the way)") }
  :: atomic { faults > 0 -> NEXT; faults--; step(op, tk, me, arg); SHOW(" (ran, reply lost)"); rc = ERR }
  :: atomic { faults > 0 -> NEXT; faults--; step(op, tk, me, arg); SHOW(" (ran, reply lost, resent)") };
     atomic { step(op, tk, me, arg); STARTS(op); GOT(op); SHOW(" (the resend)") }
  :: atomic { faults > 0 && lop == 0 -> NEXT; faults--; lop = op; ltk = tk; lp = me; larg = arg; rc = ERR; SHOW(" (delayed)") }
  fi
}

/* Runs the delayed command whenever the network delivers it; nobody reads its reply. */
active proctype Late() {
  mtype rc;
  byte ratt, rst;
end_late:
  do
  :: atomic { lop != 0 -> step(lop, ltk, lp, larg);
       printf("the delayed %e of caller %d token %d runs: %e\n", lop, lp, ltk, rc); lop = 0; ltk = 0; lp = 0; larg = 0; rc = 0; ratt = 0; rst = 0 }
  od
}
