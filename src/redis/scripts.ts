/**
 * The Lua scripts behind the Redis store. Each runs atomically in Redis, so a read, its check and its write (the
 * record and both indexes) can never interleave with another client's. Records are JSON strings whose numbers are
 * decimal strings: JavaScript computes every new time, and Lua only compares them (`tonumber`) and copies them, so
 * no epoch millisecond ever goes through Lua's 14-digit number formatting.
 *
 * Keys: KEYS[1] the record, KEYS[2] the expiry index (ZSET, score = expiresAt), KEYS[3] the key index (ZSET, all
 * scores 0, for lexicographic listing). The physical TTL is the logical one plus a margin (ARGV "margin").
 */

const HELPERS = `
local function live(r, now) return tonumber(r.expiresAt) > now end
local function ttl(r, now, margin) return string.format('%d', math.max(1, tonumber(r.expiresAt) - now + margin)) end
local function matches(r, e)
  if e.token ~= nil and r.token ~= e.token then return false end
  if e.state ~= nil and r.state ~= e.state then return false end
  return true
end
`;

/**
 * ARGV: key, now, fresh record JSON, fresh expiresAt, fresh physical TTL, fingerprint, token, takeover leaseUntil,
 * margin. Returns {status, record JSON[, previous JSON]}.
 */
export const CLAIM = `${HELPERS}
local key, now = ARGV[1], tonumber(ARGV[2])
local function index(expiresAt)
  redis.call('ZADD', KEYS[2], expiresAt, key)
  redis.call('ZADD', KEYS[3], 0, key)
end
if redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[5]) then
  index(ARGV[4])
  return {'claimed', ARGV[3]}
end
local raw = redis.call('GET', KEYS[1])
local r = cjson.decode(raw)
if not live(r, now) then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[5])
  index(ARGV[4])
  return {'claimed', ARGV[3]}
end
-- The same token again is this very claim, resent by a client after a dropped connection: it already holds the key.
if r.state == 'pending' and r.token == ARGV[7] then return {'claimed', raw} end
if r.state == 'pending' and r.leaseUntil ~= cjson.null and tonumber(r.leaseUntil) <= now
    and r.fingerprint == ARGV[6] then
  r.token = ARGV[7]
  r.leaseUntil = ARGV[8]
  r.updatedAt = ARGV[2]
  if tonumber(ARGV[4]) > tonumber(r.expiresAt) then r.expiresAt = ARGV[4] end
  local value = cjson.encode(r)
  redis.call('SET', KEYS[1], value, 'PX', ttl(r, now, tonumber(ARGV[9])))
  index(r.expiresAt)
  return {'taken_over', value, raw}
end
return {'exists', raw}
`;

/** ARGV: key, now, expect JSON, patch JSON (fields to set, numbers as strings), margin. Returns the new JSON or nil. */
export const UPDATE = `${HELPERS}
local now = tonumber(ARGV[2])
local raw = redis.call('GET', KEYS[1])
if not raw then return nil end
local r = cjson.decode(raw)
if not live(r, now) or not matches(r, cjson.decode(ARGV[3])) then return nil end
for field, value in pairs(cjson.decode(ARGV[4])) do r[field] = value end
r.updatedAt = ARGV[2]
local value = cjson.encode(r)
redis.call('SET', KEYS[1], value, 'PX', ttl(r, now, tonumber(ARGV[5])))
redis.call('ZADD', KEYS[2], r.expiresAt, ARGV[1])
return value
`;

/** ARGV: key, now, expect JSON. Returns 1 when it deleted the record. */
export const DELETE = `${HELPERS}
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if not live(r, tonumber(ARGV[2])) or not matches(r, cjson.decode(ARGV[3])) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
`;

/**
 * KEYS: the key index. ARGV: record key prefix, now, ZRANGEBYLEX start, key prefix ('' for none), state ('' for
 * any), how many records are still wanted, how many index entries to look at at most. Returns {next start or '',
 * key, JSON, key, JSON, ...}: live matching records in byte order of their keys, and where to go on from ('' when
 * the range is exhausted). The scan bound keeps one call from blocking Redis on a large index.
 */
export const LIST = `
local now, prefix, state, wanted, bound = tonumber(ARGV[2]), ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local entries = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[3], '+', 'LIMIT', 0, bound)
local out = {''}
for _, key in ipairs(entries) do
  if string.sub(key, 1, #prefix) ~= prefix then return out end
  local raw = redis.call('GET', ARGV[1] .. key)
  if raw then
    local r = cjson.decode(raw)
    if tonumber(r.expiresAt) > now and (state == '' or r.state == state) then
      out[#out + 1] = key
      out[#out + 1] = raw
      if #out >= 1 + 2 * wanted then return out end
    end
  end
end
if #entries == bound then out[1] = '(' .. entries[#entries] end
return out
`;

/**
 * KEYS: the expiry index, the key index. ARGV: record key prefix, now, limit. Deletes up to `limit` records whose
 * expiresAt has passed (or that Redis already expired) with their index entries; returns how many.
 */
export const PURGE = `
local now = tonumber(ARGV[2])
local removed = 0
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, ARGV[3])) do
  local raw = redis.call('GET', ARGV[1] .. key)
  local r = raw and cjson.decode(raw)
  if r and tonumber(r.expiresAt) > now then
    redis.call('ZADD', KEYS[1], r.expiresAt, key) -- a stale score; never delete a live record
  else
    redis.call('DEL', ARGV[1] .. key)
    redis.call('ZREM', KEYS[1], key)
    redis.call('ZREM', KEYS[2], key)
    removed = removed + 1
  end
end
return removed
`;
