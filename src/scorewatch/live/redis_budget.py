"""A spend budget's ledger in Redis: every serve replica and worker naming the same Redis
spends one budget (`live/budget_ledger.py` holds the interface).

Per budget and period, one hash `<prefix><name>:<period>` holds `spent` and `reserved` (USD, as
Redis floats), kept two periods (a TTL) so old periods clean themselves up. A second hash,
`<prefix><name>:rates`, holds each process's latest arrival rate and when Redis heard it; a
process's reading is counted while it is younger than `rate_ttl_s`. Every operation is one Lua
script, so a reservation is checked against the limit and taken atomically, whatever the number
of processes.

The client is synchronous (live sampling decides without awaiting) with a short timeout: a
call's decision waits at most `timeout_s` for Redis, and only calls the local pacing would sample
ask Redis at all, plus one refresh a second. serve makes its decisions on a worker thread when
a budget is kept here (`plan_items_off_loop`), so a slow Redis never stalls its serving loop.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import TYPE_CHECKING, Any, Final

from .budget_ledger import Totals

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["DEFAULT_PREFIX", "RedisLedger"]

DEFAULT_PREFIX: Final = "scorewatch:budget:"

# KEYS: the period's hash, the rates hash. ARGV: mode, amount, limit or cost, ttl (s),
# process id, its arrival rate (negative: not reported), rate ttl (ms), the weight of a settled
# cost in the shared cost per run (negative: the cost was not measured).
_SCRIPT: Final = """
local mode = ARGV[1]
local amount = tonumber(ARGV[2])
local other = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if tonumber(ARGV[6]) >= 0 then
  redis.call('HSET', KEYS[2], ARGV[5], ARGV[6] .. ':' .. now_ms)
  redis.call('EXPIRE', KEYS[2], ttl)
end
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local taken = 0
if mode == 'reserve' then
  local committed = spent + reserved
  if (amount > 0 and committed + amount <= other) or (amount <= 0 and committed < other) then
    taken = 1
    if amount > 0 then
      reserved = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', ARGV[2]))
    end
  end
elseif mode == 'settle' then
  reserved = math.max(reserved - amount, 0)
  redis.call('HSET', KEYS[1], 'reserved', tostring(reserved))
  spent = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'spent', ARGV[3]))
  local weight = tonumber(ARGV[8])
  if weight >= 0 then
    local previous = redis.call('HGET', KEYS[2], 'cost')
    local cost = other
    if previous then
      cost = tonumber(previous) + weight * (other - tonumber(previous))
    end
    redis.call('HSET', KEYS[2], 'cost', tostring(cost))
    redis.call('EXPIRE', KEYS[2], ttl)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ttl)
end
local others = 0
local readings = redis.call('HGETALL', KEYS[2])
for index = 1, #readings, 2 do
  if readings[index] ~= ARGV[5] and readings[index] ~= 'cost' then
    local value = readings[index + 1]
    local split = string.find(value, ':', 1, true)
    local heard = tonumber(string.sub(value, split + 1))
    if now_ms - heard <= tonumber(ARGV[7]) then
      others = others + tonumber(string.sub(value, 1, split - 1))
    else
      redis.call('HDEL', KEYS[2], readings[index])
    end
  end
end
local cost = redis.call('HGET', KEYS[2], 'cost') or ''
return {taken, tostring(spent), tostring(reserved), tostring(others), cost}
"""


class RedisLedger:
    """Spending of budgets in Redis at `url`, under `prefix`, periods of `period_s` seconds."""

    remote = True

    def __init__(
        self,
        url: str,
        name: str,
        *,
        period_s: float = 86_400.0,
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 0.5,
        rate_ttl_s: float = 30.0,
    ) -> None:
        from redis import Redis

        self.name = name
        self.prefix = prefix
        self._ttl = max(int(2 * period_s), 1)
        self._rate_ttl_ms = int(rate_ttl_s * 1000)
        # One process (not one ledger) per reading: the same id for every budget it keeps.
        self.process = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._client: Redis = Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._script = self._client.register_script(_SCRIPT)

    def __repr__(self) -> str:
        # The URL may carry a password: never shown.
        return f"RedisLedger(name={self.name!r}, prefix={self.prefix!r})"

    def _run(
        self, period: int, mode: str, amount: float, other: float, rate: float, weight: float = -1
    ) -> Any:
        keys = [f"{self.prefix}{self.name}:{period}", f"{self.prefix}{self.name}:rates"]
        args: list[str | int] = [mode, repr(amount), repr(other), self._ttl, self.process]
        return self._script(keys=keys, args=[*args, repr(rate), self._rate_ttl_ms, repr(weight)])

    @staticmethod
    def _totals(answer: Any) -> Totals:
        cost = answer[4]
        return Totals(
            float(answer[1]), float(answer[2]), float(answer[3]), float(cost) if cost else None
        )

    def reserve(
        self, period: int, expected: float, limit: float, arrival_rate: float
    ) -> tuple[bool, Totals]:
        answer = self._run(period, "reserve", expected, limit, arrival_rate)
        return bool(int(answer[0])), self._totals(answer)

    def settle(self, period: int, reserved: float, cost: float, weight: float = -1.0) -> Totals:
        return self._totals(self._run(period, "settle", reserved, cost, -1.0, weight))

    def totals(self, period: int, arrival_rate: float) -> Totals:
        return self._totals(self._run(period, "totals", 0.0, 0.0, arrival_rate))

    def close(self) -> None:
        self._client.close()
