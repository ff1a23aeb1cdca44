"""The server-side scripts of the Redis tier: each atomic state change is one script (T6).

Keys of one namespace (prefix ``P`` = ``kvo:<layout digest hex>:``, T3):

- ``P st``    hash: block hash → ref_cnt (``-1`` pending, ``0`` idle, ``k`` pins)
- ``P slot``  hash: block hash → slot id; ``P b:<slot>`` the slot's record (T1)
- ``P free``  list of free slot ids; ``P cap`` the capacity
- ``P lru``   sorted set: block hash → recency (``P clock`` counts uses); exact LRU (L1–L3)
- ``P w:<client>|<hash>`` a writer's staged record (plain ``SET`` with a TTL of one lease)
- ``P leases`` sorted set of ``w<client>|<hash>`` (a pending block) and ``r<client>|<hash>``
  (pins, counted in hash ``P pins``), scored by expiry in milliseconds (T4)

Every script first reclaims expired leases (T4): an expired pin is a completed load, an
expired pending block a failed store. ``ARGV[1]`` is the time in milliseconds, or ``0``
for the server's clock (``TIME``), so tests can drive time explicitly.
"""

from __future__ import annotations

__all__ = ["PRELUDE", "SCRIPTS"]

PRELUDE = r"""
local P = KEYS[1]
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop(h)
  local slot = redis.call('HGET', P .. 'slot', h)
  redis.call('HDEL', P .. 'st', h)
  redis.call('HDEL', P .. 'slot', h)
  redis.call('ZREM', P .. 'lru', h)
  redis.call('DEL', P .. 'b:' .. slot)
  redis.call('RPUSH', P .. 'free', slot)
end
local function sweep()
  local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now)
  for _, m in ipairs(expired) do
    redis.call('ZREM', P .. 'leases', m)
    local h = string.sub(m, string.find(m, '|', 2, true) + 1)
    if string.sub(m, 1, 1) == 'r' then
      local held = tonumber(redis.call('HGET', P .. 'pins', m) or '0')
      redis.call('HDEL', P .. 'pins', m)
      redis.call('HINCRBY', P .. 'st', h, -held)
    else
      redis.call('DEL', P .. 'w:' .. string.sub(m, 2))  -- the dead writer's staged record
      if redis.call('HGET', P .. 'st', h) == '-1' then drop(h) end
    end
  end
end
sweep()
"""

# ARGV: now, capacity. Creates the namespace once; answers its capacity.
_INIT = r"""
local cap = redis.call('GET', P .. 'cap')
if cap then return tonumber(cap) end
local n = tonumber(ARGV[2])
redis.call('SET', P .. 'cap', n)
local i = 0
while i < n do
  local batch = {}
  for j = i, math.min(i + 999, n - 1) do batch[#batch + 1] = j end
  redis.call('RPUSH', P .. 'free', unpack(batch))
  i = i + 1000
end
return n
"""

# ARGV: now, hashes... → number of leading hashes that are present and ready (M1, T6).
_LOOKUP = r"""
local hits = 0
for i = 2, #ARGV do
  local rc = redis.call('HGET', P .. 'st', ARGV[i])
  if not rc or tonumber(rc) < 0 then break end
  hits = hits + 1
end
return hits
"""

# ARGV: now, hashes... (P4: last to first, so the first ends most recent; L2).
_TOUCH = r"""
for i = #ARGV, 2, -1 do
  if redis.call('ZSCORE', P .. 'lru', ARGV[i]) then
    redis.call('ZADD', P .. 'lru', redis.call('INCR', P .. 'clock'), ARGV[i])
  end
end
return 0
"""

# ARGV: now, lease_ms, client, hashes... → {to_store, slots, evicted} or false (M5, L3, T4).
_PREPARE_STORE = r"""
local lease, client = tonumber(ARGV[2]), ARGV[3]
local listed, to_store = {}, {}
for i = 4, #ARGV do
  local h = ARGV[i]
  if not listed[h] then
    listed[h] = true
    if not redis.call('HGET', P .. 'st', h) then to_store[#to_store + 1] = h end
  end
end
if #to_store == 0 then return {{}, {}, {}} end
local need = #to_store - redis.call('LLEN', P .. 'free')
local victims = {}
if need > 0 then
  -- Walk from the least recent end, 256 at a time: pinned and pending blocks are skipped,
  -- and the walk stops as soon as `need` victims are found (L3, P5).
  local start = 0
  while #victims < need do
    local page = redis.call('ZRANGE', P .. 'lru', start, start + 255)
    if #page == 0 then break end
    for _, h in ipairs(page) do
      if not listed[h] and redis.call('HGET', P .. 'st', h) == '0' then
        victims[#victims + 1] = h
        if #victims == need then break end
      end
    end
    start = start + 256
  end
  if #victims < need then return false end
end
for _, h in ipairs(victims) do drop(h) end
local slots = {}
for i, h in ipairs(to_store) do
  local slot = redis.call('LPOP', P .. 'free')
  slots[i] = slot
  redis.call('HSET', P .. 'st', h, -1)
  redis.call('HSET', P .. 'slot', h, slot)
  redis.call('ZADD', P .. 'lru', redis.call('INCR', P .. 'clock'), h)
  redis.call('ZADD', P .. 'leases', now + lease, 'w' .. client .. '|' .. h)
end
return {to_store, slots, victims}
"""

# ARGV: now, client, success (1/0), need_record (1/0), hashes... → the hashes that became ready (success) or were
# dropped (failure): M6/M7 on this client's live pending blocks only (T4). On success the
# staged record ``P w:<client>|<hash>`` (a plain SET with a TTL of one lease) is renamed
# into the block's slot; with need_record, a block whose record is missing is a failed
# store (T2). Without it (the plain manager interface, bytes kept elsewhere) M6 as written.
_COMPLETE_STORE = r"""
local client, success, need_record = ARGV[2], ARGV[3] == '1', ARGV[4] == '1'
local done = {}
for i = 5, #ARGV do
  local h = ARGV[i]
  local m = 'w' .. client .. '|' .. h
  local staged = P .. 'w:' .. client .. '|' .. h
  if redis.call('ZREM', P .. 'leases', m) == 1 then
    local has_record = redis.call('EXISTS', staged) == 1
    if success and (has_record or not need_record) then
      if has_record then
        local slot_key = P .. 'b:' .. redis.call('HGET', P .. 'slot', h)
        redis.call('RENAME', staged, slot_key)
        redis.call('PERSIST', slot_key)
      end
      redis.call('HSET', P .. 'st', h, 0)
      done[#done + 1] = h
    else
      redis.call('DEL', staged)
      drop(h)
      if not success then done[#done + 1] = h end
    end
  end
end
return done
"""

# ARGV: now, lease_ms, client, hashes... → slots, or an M2 error with nothing changed (T5).
_PREPARE_LOAD = r"""
local lease, client = tonumber(ARGV[2]), ARGV[3]
for i = 4, #ARGV do
  local rc = redis.call('HGET', P .. 'st', ARGV[i])
  if not rc then return redis.error_reply('M2 absent ' .. (i - 4)) end
  if tonumber(rc) < 0 then return redis.error_reply('M2 pending ' .. (i - 4)) end
end
local slots = {}
for i = 4, #ARGV do
  local h = ARGV[i]
  local m = 'r' .. client .. '|' .. h
  redis.call('HINCRBY', P .. 'st', h, 1)
  redis.call('HINCRBY', P .. 'pins', m, 1)
  redis.call('ZADD', P .. 'leases', now + lease, m)
  slots[#slots + 1] = redis.call('HGET', P .. 'slot', h)
end
return slots
"""

# ARGV: now, client, strict (1/0), hashes... → drops this client's pins (M3). Strict: an M3 error
# with nothing changed if the client holds fewer pins; else only the pins it still holds (T4).
_COMPLETE_LOAD = r"""
local client, strict = ARGV[2], ARGV[3] == '1'
local count, order = {}, {}
for i = 4, #ARGV do
  local h = ARGV[i]
  if not count[h] then count[h] = 0; order[#order + 1] = h end
  count[h] = count[h] + 1
end
for idx, h in ipairs(order) do
  local held = tonumber(redis.call('HGET', P .. 'pins', 'r' .. client .. '|' .. h) or '0')
  if held < count[h] then
    if strict then return redis.error_reply('M3 ' .. held .. ' ' .. idx) end
    count[h] = held
  end
end
for _, h in ipairs(order) do
  local c = count[h]
  if c > 0 then
    local m = 'r' .. client .. '|' .. h
    redis.call('HINCRBY', P .. 'st', h, -c)
    if redis.call('HINCRBY', P .. 'pins', m, -c) <= 0 then
      redis.call('HDEL', P .. 'pins', m)
      redis.call('ZREM', P .. 'leases', m)
    end
  end
end
return 0
"""

# ARGV: now → {free slots, present blocks, leases} (reclaims first: an audit for E2).
_STATS = r"""
return {redis.call('LLEN', P .. 'free'), redis.call('HLEN', P .. 'st'), redis.call('ZCARD', P .. 'leases')}
"""

SCRIPTS = {
    "init": _INIT,
    "lookup": _LOOKUP,
    "touch": _TOUCH,
    "prepare_store": _PREPARE_STORE,
    "complete_store": _COMPLETE_STORE,
    "prepare_load": _PREPARE_LOAD,
    "complete_load": _COMPLETE_LOAD,
    "stats": _STATS,
}
