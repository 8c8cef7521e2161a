import { LUA_TIME } from "./scripts.js";

/**
 * The Lua scripts of the store without indexes (layout 3, see lean-value.ts for the value's ten lines). A new key
 * needs none of them: the client's `SET key value PX ttl NX GET` creates it, or returns what is there. They run for
 * everything that must compare and write in one atomic step: the claim of a key that holds a record the client
 * cannot answer alone (pending, or relative to a creation only Redis knows), completing, renewing, releasing,
 * deleting, and reading a record. Time is Redis's `TIME` unless the client passes `now` (the `clock` option). The key
 * expires when its record does (`PXAT` its expiresAt; a plain `SET` gives `PX` the retention): with every decision
 * on Redis's clock, a key that exists is live, which is what lets a plain `SET ... NX GET` answer a replay.
 *
 * Keys: KEYS[1] the record. A record that is not a string was written by an indexed store (a hash), and the script
 * fails with `IDEMKEY_LAYOUT`.
 */

const COMMON = `
local function layout(r)
  local message = type(r) == 'table' and r.err or tostring(r)
  if not string.find(message, 'WRONGTYPE', 1, true) then error(r) end
  error({err = 'IDEMKEY_LAYOUT ' .. KEYS[1] .. ' is not a string: a record of an indexed store (layout 2)'})
end
${LUA_TIME}
-- The key expires when the record does: at that instant of Redis's clock (PXAT), or, when the client's clock decides
-- (the clock option, for tests), after the same duration on Redis's.
local function expiry(at, now)
  if ARGV[1] == '' then return 'PXAT', ms(at) end
  return 'PX', ms(math.max(1, at - now))
end
-- The value's ten lines, with relative times ('+N', written by a plain SET) made absolute from the key's expiry.
local function read()
  local ok, v = pcall(redis.call, 'GET', KEYS[1])
  if not ok then layout(v) end
  if not v then return nil end
  local f, pos = {}, 1
  for i = 1, 9 do
    local e = string.find(v, '\\n', pos, true)
    f[i] = string.sub(v, pos, e - 1)
    pos = e + 1
  end
  f[10] = string.sub(v, pos)
  if string.byte(f[7], 1) == 43 then
    local base = redis.call('PEXPIRETIME', KEYS[1]) - tonumber(string.sub(f[7], 2))
    for _, i in ipairs({3, 5, 6, 7}) do
      if f[i] ~= '' then f[i] = ms(base + tonumber(string.sub(f[i], 2))) end
    end
  end
  return f
end
`;

/**
 * ARGV: now ('' for TIME), state, token (as a JSON string), fingerprint (JSON), leaseMs ('' for no lease), ttlMs,
 * data (JSON, '' for none). Returns `now` alone (a string) when it created the record, else {status, now, value}:
 * the record as it was, its times absolute. On a takeover the client applies the same change; `resent` is a claim
 * whose token already holds the pending record (the resend rule, see record.ts `resent`).
 */
export const LEAN_CLAIM = `${COMMON}
local now = clock(ARGV[1])
local stamp = ms(now)
local f = read()
if not f or tonumber(f[7]) <= now then
  local lease = ARGV[5] ~= '' and ms(now + tonumber(ARGV[5])) or ''
  redis.call('SET', KEYS[1], table.concat({ARGV[2], ARGV[3], lease, '0', stamp, stamp, ms(now + tonumber(ARGV[6])),
    ARGV[4], '', ARGV[7]}, '\\n'), expiry(now + tonumber(ARGV[6]), now))
  return stamp
end
local old = table.concat(f, '\\n')
if f[1] == 'pending' and f[3] ~= '' and tonumber(f[3]) <= now and f[8] == ARGV[4] then
  local lease = ARGV[5] ~= '' and ARGV[5] or '0'
  local expiresAt = math.max(tonumber(f[7]), now + tonumber(ARGV[6]))
  f[2], f[3], f[6], f[7] = ARGV[3], ms(now + tonumber(lease)), stamp, ms(expiresAt)
  redis.call('SET', KEYS[1], table.concat(f, '\\n'), expiry(expiresAt, now))
  return {'taken_over', stamp, old}
end
if f[1] == 'pending' and f[2] == ARGV[3] then return {'resent', stamp, old} end
return {'exists', stamp, old}
`;

/**
 * ARGV: now ('' for TIME), expected token ('=' .. its JSON string, '=' alone for none, or '' for any), expected
 * state ('' for any), new ttlMs ('' when the expiry stays), new leaseMs ('' when the lease stays or is cleared by a
 * pair), then line number / line pairs to set ('' clears). Returns {now, value} as written, or nil when no live
 * record matched.
 *
 * Every completion runs it, so it does the least it can, measured on a private server (INFO commandstats): no
 * helper functions built per call, and only the seven short lines split off; the last three (fingerprint, result,
 * data: the long ones) stay one piece unless the patch sets result or data.
 */
export const LEAN_UPDATE = `
local ok, v = pcall(redis.call, 'GET', KEYS[1])
if not ok then
  local message = type(v) == 'table' and v.err or tostring(v)
  if not string.find(message, 'WRONGTYPE', 1, true) then error(v) end
  error({err = 'IDEMKEY_LAYOUT ' .. KEYS[1] .. ' is not a string: a record of an indexed store (layout 2)'})
end
if not v then return nil end
local f, pos = {}, 1
for i = 1, 7 do
  local e = string.find(v, '\\n', pos, true)
  f[i] = string.sub(v, pos, e - 1)
  pos = e + 1
end
if ARGV[2] ~= '' and f[2] ~= string.sub(ARGV[2], 2) then return nil end
if ARGV[3] ~= '' and f[1] ~= ARGV[3] then return nil end
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if string.byte(f[7], 1) == 43 then
  local base = redis.call('PEXPIRETIME', KEYS[1]) - tonumber(string.sub(f[7], 2))
  if f[3] ~= '' then f[3] = string.format('%.0f', base + tonumber(string.sub(f[3], 2))) end
  f[5] = string.format('%.0f', base + tonumber(string.sub(f[5], 2)))
  f[7] = string.format('%.0f', base + tonumber(string.sub(f[7], 2)))
end
if tonumber(f[7]) <= now then return nil end
local stamp = string.format('%.0f', now)
f[6] = stamp
if ARGV[5] ~= '' then f[3] = string.format('%.0f', now + tonumber(ARGV[5])) end
local tail = string.sub(v, pos)
for i = 6, #ARGV, 2 do
  local line = tonumber(ARGV[i])
  if line > 7 and tail then
    -- Split the long lines only for a patch that sets one of them.
    local a = string.find(tail, '\\n', 1, true)
    local b = string.find(tail, '\\n', a + 1, true)
    f[8], f[9], f[10] = string.sub(tail, 1, a - 1), string.sub(tail, a + 1, b - 1), string.sub(tail, b + 1)
    tail = nil
  end
  f[line] = ARGV[i + 1]
end
if tail then f[8] = tail end
local mode, at = 'KEEPTTL', nil
if ARGV[4] ~= '' then
  f[7] = string.format('%.0f', now + tonumber(ARGV[4]))
  if ARGV[1] == '' then mode, at = 'PXAT', f[7] else mode, at = 'PX', string.format('%.0f', math.max(1, tonumber(ARGV[4]))) end
end
local value = table.concat(f, '\\n')
if at then redis.call('SET', KEYS[1], value, mode, at) else redis.call('SET', KEYS[1], value, mode) end
return {stamp, value}
`;

/** ARGV: now ('' for TIME), expected token and state as for LEAN_UPDATE. Returns 1 when it deleted. */
export const LEAN_DELETE = `${COMMON}
local f = read()
if not f or tonumber(f[7]) <= clock(ARGV[1]) then return 0 end
if ARGV[2] ~= '' and f[2] ~= string.sub(ARGV[2], 2) then return 0 end
if ARGV[3] ~= '' and f[1] ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

/** ARGV: now ('' for TIME). Returns the live record's value, its times absolute, or nil. */
export const LEAN_GET = `${COMMON}
local f = read()
if not f or tonumber(f[7]) <= clock(ARGV[1]) then return nil end
return table.concat(f, '\\n')
`;
