"""How long and how wide a run is: the full benchmark (≤ 15 minutes on 2 cores) and ``--quick``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    warmup: float  # seconds of load before the first measured window
    windows: int  # consecutive measured windows per point: the repetitions whose median and spread we report
    window: float  # seconds per window
    concurrencies: tuple[int, ...]  # tools/call on the recommended server (ours and the peer)
    other_concurrencies: tuple[int, ...]  # tools/call on the other ASGI servers (ours only)
    tools: tuple[str, ...]
    session_concurrency: int
    list_windows: int
    progress_calls: int  # tool calls per era; each emits ``progress_steps`` notifications
    progress_steps: int
    progress_intervals_ms: tuple[int, ...]  # 0: as fast as the tool can emit; >0: paced
    idle_sessions: int
    sse_streams: int
    scaling_processes: tuple[int, ...]
    catalog_tools: int = 10_000
    activity_rounds: int = 5  # the activity log's off/on pairs, measured side by side
    max_minutes: float = 20.0

    def closed_loop_seconds(self, windows: int | None = None) -> float:
        return self.warmup + (windows or self.windows) * self.window

    def planned_minutes(self, servers: int) -> float:
        """A rough duration of the whole run, for the progress line (start-ups and set-up included)."""
        point = self.closed_loop_seconds() + 1.5
        points = 2 * 2 * len(self.tools) * len(self.concurrencies)  # eras x tools x c, ours and the peer
        points += (servers - 1) * 2 * len(self.tools) * len(self.other_concurrencies)
        points += 4 + servers + len(self.scaling_processes)  # set-up, ceilings, scaling
        points += 2 * self.activity_rounds  # the activity log: eras (off and on side by side)
        wrk = (2 + servers) * self.windows * self.window
        lists = 4 * (self.warmup + self.list_windows * self.window + 2)
        progress = 4 * sum(
            self.progress_calls * (0.3 + self.progress_steps * i / 1000) for i in self.progress_intervals_ms
        )
        memory = 2 * (self.idle_sessions / 50 + 2 * self.sse_streams / 100 + 8)
        start_ups = (8 + 2 * servers) * 4
        return (points * point + wrk + lists + progress + memory + start_ups + 30) / 60


FULL = Profile(
    name="full",
    warmup=2.0,
    windows=3,
    window=3.0,
    concurrencies=(1, 16, 64),
    other_concurrencies=(16,),
    tools=("static_info", "echo"),
    session_concurrency=16,
    list_windows=3,
    progress_calls=5,
    progress_steps=100,
    progress_intervals_ms=(0, 10),
    idle_sessions=1000,
    sse_streams=500,
    scaling_processes=(1, 2),
    max_minutes=20.0,
)

QUICK = Profile(
    name="quick",
    warmup=0.5,
    windows=2,
    window=1.0,
    concurrencies=(16,),
    other_concurrencies=(16,),
    tools=("static_info", "echo"),
    session_concurrency=16,
    list_windows=2,
    progress_calls=2,
    progress_steps=100,
    progress_intervals_ms=(0, 10),
    idle_sessions=200,
    sse_streams=100,
    scaling_processes=(1, 2),
    activity_rounds=1,
    max_minutes=8.0,
)

PROFILES = {profile.name: profile for profile in (FULL, QUICK)}
