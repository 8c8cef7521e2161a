/**
 * The Lua scripts behind the Redis store. Each runs atomically in Redis, so a read, its check and its write (the
 * record and its index entries) can never interleave with another client's.
 *
 * Layout 2 (recorded in the marker key `<prefix>layout`, see layout.ts). A record is a hash under `<prefix>r:<key>`
 * with the fields of FIELDS; a field that is null is absent. Times are decimal strings of epoch ms. Every script
 * decides time on Redis's clock (`TIME`, read once per script) unless the client passed a `now` (the store's `clock`
 * option, for tests): so a process whose clock is skewed can neither take over a live lease nor stretch its own.
 * New times are `now` plus a duration the client sends; they are formatted with `%.0f`, exact for epoch
 * milliseconds (13 digits, far below 2^53). Scripts read the fields they check with one HMGET and write only the
 * fields that change: no JSON is decoded or encoded in Redis. Layout 1 kept each record as one JSON string; a script
 * that meets one fails with an `IDEMKEY_LAYOUT` error rather than misread it.
 *
 * Keys: KEYS[1] the record, KEYS[2] the expiry index (ZSET, score = expiresAt or earlier: a score never lies after
 * the record's expiry, and purge moves an early one forward), KEYS[3] the key index (ZSET, all scores 0, for
 * lexicographic listing). The physical TTL is at least the logical one plus a margin (ARGV "margin"): set when a
 * record is made and whenever its expiresAt moves later; an earlier expiresAt leaves the longer TTL in place.
 */

/** The record's fields, in the order every script returns them. */
export const FIELDS = [
  "state",
  "fingerprint",
  "token",
  "leaseUntil",
  "attempts",
  "result",
  "data",
  "createdAt",
  "updatedAt",
  "expiresAt",
] as const;

/**
 * Lua for every script's time: `clock(given)` is the client's `now` when it passes one (the `clock` option, for
 * tests), else Redis's own `TIME` in ms; `ms(n)` prints a time as an integer for a reply or a PX/PXAT argument.
 */
export const LUA_TIME = `local function clock(given)
  if given ~= '' then return tonumber(given) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms(n) return string.format('%.0f', n) end`;

/**
 * Raises what a failed read of KEYS[1] (its error in `r`) means: only WRONGTYPE is a record of another layout; any
 * other error (a key a reshard moved off this node) goes on as it is. Inlined where a script reads only KEYS[1], so
 * that the script defines no function on its way (issue 44: helpers rebuilt on every call).
 */
const LAYOUT_ERROR = `  local message = type(r) == 'table' and r.err or tostring(r)
  if not string.find(message, 'WRONGTYPE', 1, true) then error(r) end
  error({err = 'IDEMKEY_LAYOUT ' .. KEYS[1] .. ' is not a hash: a record of layout 1 (a JSON string)'})`;

export const READ = `
local function layout(key, r)
  -- Only WRONGTYPE is a record of another layout; any other error (a key a reshard moved off this node) goes on as it is.
  local message = type(r) == 'table' and r.err or tostring(r)
  if not string.find(message, 'WRONGTYPE', 1, true) then error(r) end
  error({err = 'IDEMKEY_LAYOUT ' .. key .. ' is not a hash: a record of layout 1 (a JSON string)'})
end
${LUA_TIME}
local function read(key, ...)
  local ok, r = pcall(redis.call, 'HMGET', key, ...)
  if ok then return r end
  layout(key, r)
end
local ALL = {${FIELDS.map((f) => `'${f}'`).join(", ")}}
`;

/** Calls `read(key, unpack(ALL))` and names the positions of ALL. */
const AT = Object.fromEntries(FIELDS.map((f, i) => [f, i + 1])) as Record<(typeof FIELDS)[number], number>;

const CLAIM_HEAD = `
local now
if ARGV[2] ~= '' then now = tonumber(ARGV[2]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local stamp = string.format('%.0f', now)
local expiresAtNew = string.format('%.0f', now + tonumber(ARGV[7]))
-- EXISTS works on a key of any type, so a fresh key needs no layout check: the HSET cannot meet a string.
if redis.call('EXISTS', KEYS[1]) == 0 then return create(KEYS, ARGV, now, stamp, expiresAtNew, true) end
`;

const CLAIM_TAIL = `
local r = read(KEYS[1], unpack(ALL))
local expiresAt = r[${AT.expiresAt}]
if not expiresAt or tonumber(expiresAt) <= now then
  -- An expired record may still hold fields the new one leaves absent.
  if expiresAt then redis.call('DEL', KEYS[1]) end
  return create(KEYS, ARGV, now, stamp, expiresAtNew, not expiresAt)
end
local state, token, leaseUntil = r[${AT.state}], r[${AT.token}], r[${AT.leaseUntil}]
if state == 'pending' and leaseUntil and tonumber(leaseUntil) <= now and r[${AT.fingerprint}] == ARGV[4] then
  local lease = ARGV[6] ~= '' and ARGV[6] or '0'
  redis.call('HSET', KEYS[1], 'token', ARGV[5], 'leaseUntil', ms(now + tonumber(lease)), 'updatedAt', stamp)
  -- Keep the later expiry; the index's score for the earlier one stays a valid lower bound.
  if tonumber(expiresAtNew) > tonumber(expiresAt) then
    redis.call('HSET', KEYS[1], 'expiresAt', expiresAtNew)
    redis.call('PEXPIRE', KEYS[1], ARGV[8])
  end
  return {'taken_over', stamp, unpack(r)}
end
-- The resend rule: the same token again is this very claim, resent by a client after a dropped connection. It
-- answers what the first arrival decided: created here (untouched since) or taken over (updatedAt moved on).
if state == 'pending' and token == ARGV[5] then
  return {r[${AT.createdAt}] == r[${AT.updatedAt}] and 'claimed' or 'resent_takeover', stamp, unpack(r)}
end
return {'exists', stamp, unpack(r)}
`;

/** Creates the record (the claim's fresh path): a function of its arguments, so a library defines it once. */
export const CREATE = `
local function create(KEYS, ARGV, now, stamp, expiresAtNew, indexKey)
  if ARGV[6] ~= '' then
    redis.call('HSET', KEYS[1], 'state', ARGV[3], 'fingerprint', ARGV[4], 'token', ARGV[5], 'attempts', '0',
      'createdAt', stamp, 'updatedAt', stamp, 'expiresAt', expiresAtNew,
      'leaseUntil', string.format('%.0f', now + tonumber(ARGV[6])), unpack(ARGV, 9))
  else
    redis.call('HSET', KEYS[1], 'state', ARGV[3], 'fingerprint', ARGV[4], 'token', ARGV[5], 'attempts', '0',
      'createdAt', stamp, 'updatedAt', stamp, 'expiresAt', expiresAtNew, unpack(ARGV, 9))
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
  redis.call('ZADD', KEYS[2], expiresAtNew, ARGV[1])
  -- A record Redis expired itself left its key index entry behind (harmless); a new key needs one.
  if indexKey then redis.call('ZADD', KEYS[3], 0, ARGV[1]) end
  return stamp
end`;

/** The claim's body as a library function runs it: CREATE and READ are the library's. */
export const CLAIM_BODY = `${CLAIM_HEAD}${CLAIM_TAIL}`;

/**
 * ARGV: key, now ('' for Redis's TIME), state, fingerprint, token, leaseMs ('' for no lease), ttlMs, physical TTL,
 * then 'data' and the data when there is any. Returns `now` alone (a string) when it created the record (the client
 * builds it from `now`), else {status, now, fields...}: the record as it was (FIELDS order; on a takeover the client
 * applies the same change). `resent_takeover` is the resend rule's answer for a takeover (see record.ts `resent`).
 *
 * A fresh key, the common case, takes the shortest path: nothing before it but the clock and CREATE, no table
 * built, the fields written by one literal HSET (the optional data pair expanded from ARGV's tail). The functions of
 * READ are defined after it, for the claims that meet a record.
 */
export const CLAIM = `${CREATE}${CLAIM_HEAD}${READ}${CLAIM_TAIL}`;

/**
 * ARGV: key, now ('' for TIME), expected token ('=' .. token, or '' for any), expected state ('' for any), new ttlMs
 * ('' when the expiry stays), physical TTL for it, new leaseMs ('' when the lease is not set; a cleared one is a
 * field to clear), how many fields to read back, those fields, how many field/value pairs to set, the pairs, then
 * the fields to clear. Reads the three it checks (expiresAt, token, state) and the ones asked for (those the client
 * cannot compute from its patch), in one HMGET, and returns {now, expiresAt, token, state, fields asked for...} as
 * they were, or nil when no live record matched.
 */
export const UPDATE = `
local now
if ARGV[2] ~= '' then now = tonumber(ARGV[2]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local asked = tonumber(ARGV[8])
local ok, r = pcall(redis.call, 'HMGET', KEYS[1], 'expiresAt', 'token', 'state', unpack(ARGV, 9, 8 + asked))
if not ok then
${LAYOUT_ERROR}
end
local expiresAt = r[1]
if not expiresAt or tonumber(expiresAt) <= now then return nil end
if ARGV[3] ~= '' and r[2] ~= string.sub(ARGV[3], 2) then return nil end
if ARGV[4] ~= '' and r[3] ~= ARGV[4] then return nil end
local stamp = string.format('%.0f', now)
local first = 10 + asked
local last = first - 1 + 2 * tonumber(ARGV[first - 1])
if ARGV[7] == '' and ARGV[5] == '' then
  -- The completion's common form: the pairs as they came, no table built.
  redis.call('HSET', KEYS[1], 'updatedAt', stamp, unpack(ARGV, first, last))
else
  local set = {'updatedAt', stamp}
  if ARGV[7] ~= '' then set[3] = 'leaseUntil'; set[4] = string.format('%.0f', now + tonumber(ARGV[7])) end
  if ARGV[5] ~= '' then
    local newExpiry = string.format('%.0f', now + tonumber(ARGV[5]))
    set[#set + 1] = 'expiresAt'
    set[#set + 1] = newExpiry
    -- A later expiry keeps the index score, a valid lower bound, and moves the physical TTL out; an earlier one
    -- (a completion, whose retention starts after the claim's lease) must lower the score, while the longer
    -- physical TTL stays, still past the new expiry plus the margin (purge or Redis ends the record).
    if tonumber(newExpiry) < tonumber(expiresAt) then
      redis.call('ZADD', KEYS[2], newExpiry, ARGV[1])
    else
      redis.call('PEXPIRE', KEYS[1], ARGV[6])
    end
  end
  for i = first, last do set[#set + 1] = ARGV[i] end
  redis.call('HSET', KEYS[1], unpack(set))
end
if #ARGV > last then redis.call('HDEL', KEYS[1], unpack(ARGV, last + 1)) end
table.insert(r, 1, stamp)
return r
`;

/** ARGV: key, now ('' for TIME), expected token ('=' .. token, or ''), expected state (or ''). Returns 1 when it deleted. */
const DELETE_BODY = `
local r = read(KEYS[1], 'expiresAt', 'token', 'state')
if not r[1] or tonumber(r[1]) <= clock(ARGV[2]) then return 0 end
if ARGV[3] ~= '' and r[2] ~= string.sub(ARGV[3], 2) then return 0 end
if ARGV[4] ~= '' and r[3] ~= ARGV[4] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
`;
export const DELETE = `${READ}${DELETE_BODY}`;

/** ARGV: now ('' for TIME). Returns the live record's fields in FIELDS order, or nil when there is none or it expired. */
const GET_BODY = `
local r = read(KEYS[1], unpack(ALL))
local expiresAt = r[${AT.expiresAt}]
if not expiresAt or tonumber(expiresAt) <= clock(ARGV[1]) then return nil end
return r
`;
export const GET = `${READ}${GET_BODY}`;

/**
 * KEYS: the key index. ARGV: record key prefix, now ('' for TIME), ZRANGEBYLEX start, key prefix ('' for none), state ('' for
 * any), how many records are still wanted, how many index entries to look at at most. Returns {next start or '',
 * key, fields..., key, fields..., ...} (FIELDS order): live matching records in byte order of their keys, and where
 * to go on from ('' when the range is exhausted). The scan bound keeps one call from blocking Redis on a large index.
 */
const LIST_BODY = `
local now, prefix, state, wanted, bound = clock(ARGV[2]), ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local entries = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[3], '+', 'LIMIT', 0, bound)
local out, found = {''}, 0
for _, key in ipairs(entries) do
  if string.sub(key, 1, #prefix) ~= prefix then return out end
  local r = read(ARGV[1] .. key, unpack(ALL))
  local expiresAt = r[${AT.expiresAt}]
  if expiresAt and tonumber(expiresAt) > now and (state == '' or r[${AT.state}] == state) then
    out[#out + 1] = key
    for i = 1, #ALL do out[#out + 1] = r[i] end
    found = found + 1
    if found >= wanted then return out end
  end
end
if #entries == bound then out[1] = '(' .. entries[#entries] end
return out
`;
export const LIST = `${READ}${LIST_BODY}`;

/**
 * KEYS: the key index. ARGV: record key prefix, now ('' for TIME), ZRANGEBYLEX start and end of the key prefix's
 * range ('-' and '+' for none), the key prefix ('' for none), since (epoch ms), how many records at most, index
 * entries per ZRANGEBYLEX. Returns {now, live count, key, fields..., key, fields..., ...} (FIELDS order): the live
 * records updated at or after `since`, in byte order of their keys, at most `limit`, and how many live records the
 * range holds, all at one instant. It walks the whole range, a page of index entries at a time so that no reply of
 * Redis's is larger than a page, and reads two fields of each record (all of them only for the ones it returns):
 * its cost grows with the prefix's records, and Redis runs nothing else meanwhile (measured in store.ts).
 */
const CHANGES_BODY = `
local now, prefix, since, limit, page = clock(ARGV[2]), ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local start, live, found = ARGV[3], 0, 0
local out = {ms(now), 0}
while true do
  local entries = redis.call('ZRANGEBYLEX', KEYS[1], start, ARGV[4], 'LIMIT', 0, page)
  for _, key in ipairs(entries) do
    -- Past the prefix (only possible where no end of its range could be given: a lone surrogate).
    if string.sub(key, 1, #prefix) ~= prefix then
      out[2] = live
      return out
    end
    local r = read(ARGV[1] .. key, 'expiresAt', 'updatedAt')
    if r[1] and tonumber(r[1]) > now then
      live = live + 1
      if found < limit and tonumber(r[2]) >= since then
        found = found + 1
        local all = read(ARGV[1] .. key, unpack(ALL))
        out[#out + 1] = key
        for i = 1, #ALL do out[#out + 1] = all[i] end
      end
    end
  end
  if #entries < page then break end
  start = '(' .. entries[#entries]
end
out[2] = live
return out
`;
export const CHANGES = `${READ}${CHANGES_BODY}`;

/**
 * KEYS: the expiry index, the key index. ARGV: record key prefix, now ('' for TIME), limit. Deletes up to `limit` records whose
 * expiresAt has passed (or that Redis already expired) with their index entries, and returns how many. An entry whose
 * record lives on (its expiry moved later) gets the true score and does not count; the script reads on past it, a
 * bounded number of entries, so that a batch short of `limit` still means none are left.
 */
const PURGE_BODY = `
local now, limit = clock(ARGV[2]), tonumber(ARGV[3])
local removed, looked = 0, 0
while removed < limit and looked < 10 * limit do
  local entries = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms(now), 'LIMIT', 0, limit - removed)
  if #entries == 0 then break end
  for _, key in ipairs(entries) do
    looked = looked + 1
    local ok, expiresAt = pcall(redis.call, 'HGET', ARGV[1] .. key, 'expiresAt')
    if not ok then layout(ARGV[1] .. key, expiresAt) end
    if expiresAt and tonumber(expiresAt) > now then
      redis.call('ZADD', KEYS[1], expiresAt, key)
    else
      redis.call('DEL', ARGV[1] .. key)
      redis.call('ZREM', KEYS[1], key)
      redis.call('ZREM', KEYS[2], key)
      removed = removed + 1
    end
  end
end
return removed
`;
export const PURGE = `${READ}${PURGE_BODY}`;

/** Redis's clock in epoch ms, for a listing that pages through several scripts at one instant. */
const NOW_BODY = `
return ms(clock(''))
`;
export const NOW = `${READ}${NOW_BODY}`;

/**
 * Each script's body without the helpers before it (READ, CREATE), for the function library (library.ts), which
 * defines those once at library level instead of on every call. The scripts above are these bodies with their
 * helpers, for EVALSHA where functions are unavailable and for the Python store.
 */
export const BODIES = {
  claim: CLAIM_BODY,
  update: UPDATE,
  delete: DELETE_BODY,
  get: GET_BODY,
  list: LIST_BODY,
  changes: CHANGES_BODY,
  purge: PURGE_BODY,
  now: NOW_BODY,
} as const;
